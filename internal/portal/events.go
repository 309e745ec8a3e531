package portal

import (
	"html"
	"html/template"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/store"
)

type eventsData struct {
	Kinds []catalog.Kind
	Reach string // every kind can go to every webhook type
}

// events shows the event catalog: every kind, what fires it, its data's
// fields and an example payload, from the source docs/events.md is
// generated from.
func (h *handler) events(w http.ResponseWriter, r *http.Request, _ store.Session) error {
	return h.render(w, r, http.StatusOK, "events", eventsData{Kinds: catalog.Kinds(), Reach: catalog.Reach()})
}

// inlineCode renders the catalog's one markup, `code` spans, as HTML; the
// rest of the text is escaped.
func inlineCode(s string) template.HTML {
	parts := strings.Split(s, "`")
	var b strings.Builder
	for i, p := range parts {
		// An odd count of backticks leaves the last one as text.
		if i%2 == 1 && i < len(parts)-1 {
			b.WriteString("<code>" + html.EscapeString(p) + "</code>")
			continue
		}
		if i%2 == 1 {
			b.WriteString("`")
		}
		b.WriteString(html.EscapeString(p))
	}
	return template.HTML(b.String())
}
