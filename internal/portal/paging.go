package portal

import (
	"net/url"

	"github.com/heraldhq/herald/internal/store"
)

// pageFrom reads where a list page starts: ?cursor= (the page older than
// a row), ?after= (the page newer than a row) or ?oldest=1 (the last page);
// none for the newest.
func pageFrom(q url.Values, limit int) store.Page {
	p := store.Page{Limit: limit, Cursor: q.Get("cursor"), After: q.Get("after"), Oldest: q.Get("oldest") == "1"}
	if p.After != "" {
		p.Cursor, p.Oldest = "", false
	} else if p.Cursor != "" {
		p.Oldest = false
	}
	return p
}

// pager holds the links between the pages of a list, each carrying the
// list's filters; "" where there is no such page.
type pager struct {
	Newest, Newer, Older, Oldest string
}

// newPager links the pages around w; link makes a list address with the
// current filters plus one paging parameter (none for the newest page).
func newPager[T any](w store.Window[T], p store.Page, link func(key, value string) string) pager {
	var pg pager
	onNewest := p.Cursor == "" && p.After == "" && !p.Oldest
	// An empty page away from the newest (its rows were deleted since)
	// still leads back to the start.
	if w.Newer != "" || (!onNewest && len(w.Items) == 0) {
		pg.Newest = link("", "")
	}
	if w.Newer != "" {
		pg.Newer = link("after", w.Newer)
	}
	if w.Older != "" {
		pg.Older = link("cursor", w.Older)
		pg.Oldest = link("oldest", "1")
	}
	return pg
}

// Any reports whether there is more than one page.
func (p pager) Any() bool { return p != pager{} }
