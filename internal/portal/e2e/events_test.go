package e2e_test

import (
	"html"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// docExamples reads each kind's example from docs/events.md: the first
// json block after its "### `kind`" heading.
func docExamples(t *testing.T) map[string]string {
	t.Helper()
	page, err := os.ReadFile("../../../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	re := regexp.MustCompile("(?s)### `([^`]+)`\n.*?```json\n(.*?)```")
	for _, m := range re.FindAllStringSubmatch(string(page), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// TestEventCatalogPageIsTheDoc: the portal's catalog shows every kind
// with the very example docs/events.md shows, and what fires it, and says
// that every kind can go to every webhook type; the webhook form links
// to it.
func TestEventCatalogPageIsTheDoc(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	code, _, page := b.get("/events")
	if code != http.StatusOK {
		t.Fatalf("GET /events: %d", code)
	}
	docs := docExamples(t)
	if len(docs) != len(event.Kinds) {
		t.Errorf("docs/events.md has %d examples; want %d", len(docs), len(event.Kinds))
	}
	example := regexp.MustCompile(`(?s)<pre class="body" id="([^"]+)-example"[^>]*>(.*?)</pre>`)
	shown := map[string]string{}
	for _, m := range example.FindAllStringSubmatch(page, -1) {
		shown[m[1]] = html.UnescapeString(m[2])
	}
	for _, k := range event.Kinds {
		got, ok := shown[catalog.Anchor(string(k))]
		if !ok {
			t.Errorf("%s is not on the page", k)
			continue
		}
		if want := docs[string(k)]; got != want {
			t.Errorf("%s: the page's example differs from docs/events.md's:\n%s\nwant\n%s", k, got, want)
		}
	}
	// And its payload's JSON Schema, the one the API serves.
	schemaShown := regexp.MustCompile(`(?s)<pre class="body" id="([^"]+)-schema"[^>]*>(.*?)</pre>`)
	schemas := map[string]string{}
	for _, m := range schemaShown.FindAllStringSubmatch(page, -1) {
		schemas[m[1]] = html.UnescapeString(m[2])
	}
	for _, k := range event.Kinds {
		want, _ := catalog.Schema(k)
		if got := schemas[catalog.Anchor(string(k))]; got != string(want) || !strings.Contains(got, `"const": "`+string(k)+`"`) {
			t.Errorf("%s: the page's schema is not the kind's:\n%s", k, got)
		}
		code, _, served := b.get("/v3/event-types/" + string(k) + "/schema")
		if code != http.StatusOK || served != string(want) {
			t.Errorf("%s: the schema the page links to answered %d, %d bytes; want the page's", k, code, len(served))
		}
	}
	text := html.UnescapeString(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(page, ""))
	// That every kind can go to every webhook type, as docs/events.md says.
	if reach := strings.ReplaceAll(catalog.Reach(), "`", ""); !strings.Contains(text, reach) {
		t.Errorf("the page does not say where every kind can go (%q)", reach)
	}
	for _, k := range catalog.Kinds() {
		fires := strings.ReplaceAll(k.Fires, "`", "")
		if !strings.Contains(text, fires) {
			t.Errorf("%s: the page does not say what fires it (%q)", k.Kind, fires)
		}
	}
	_, _, form := b.get("/webhooks/new")
	if !regexp.MustCompile(`(?s)<fieldset[^>]*>\s*<legend>Events</legend>.*?<a href="/events"`).MatchString(form) {
		t.Errorf("the webhook form's event list does not link to the catalog")
	}
	// Each kind's option tells what fires it, from the kind's declaration.
	for _, k := range catalog.Kinds() {
		option := `<label class="check" title="` + html.EscapeString(strings.ReplaceAll(k.Fires, "`", "")) + `"><input type="checkbox" name="events" value="` + string(k.Kind) + `"`
		if !strings.Contains(form, option) {
			t.Errorf("the webhook form's %s option does not say what fires it", k.Kind)
		}
	}
}

// TestBrowserEventCatalog: from the webhook form's event list to the
// catalog, at 1440×900 and 390×844: every kind, its fields and example;
// an index link lands on its section; a phone needs no sideways scroll.
func TestBrowserEventCatalog(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := signInTab(t, h)
	for _, size := range []struct {
		name          string
		width, height int64
		phone         bool
	}{{"desktop", 1440, 900, false}, {"phone", 390, 844, true}} {
		b.size(size.phone) // every navigation also runs axe-core at both sizes
		b.open("/webhooks/new")
		href := run(b, chromedp.Evaluate[string](`document.querySelector("fieldset #events-hint a").getAttribute("href")`))
		if href != "/events" {
			t.Fatalf("%s: the event list links to %q; want /events", size.name, href)
		}
		if code := b.open(href); code != http.StatusOK {
			t.Fatalf("%s: the catalog answered %d", size.name, code)
		}
		b.contains("h1", "Event catalog")
		if n := b.count("section.event-kind"); n != len(event.Kinds) {
			t.Errorf("%s: %d kinds shown; want %d", size.name, n, len(event.Kinds))
		}
		if n := b.count("#licensecreated table.fields tbody tr"); n != 11 {
			t.Errorf("%s: license.created lists %d data fields; want the License's 11", size.name, n)
		}
		b.do(chromedp.Click(chromedp.CSS(`tr[data-kind="license.expiresAt.updated"] a`)))
		heraldtest.Eventually(t, 10e9, "the index link to scroll to its section", func() bool {
			return strings.HasSuffix(b.path(), "#licenseexpiresatupdated") &&
				run(b, chromedp.Evaluate[bool](`(() => { const r = document.getElementById("licenseexpiresatupdated").getBoundingClientRect(); return r.top >= -1 && r.top < window.innerHeight })()`))
		})
		b.contains("#licenseexpiresatupdated", "PATCH /v3/licenses/{id}/expires-at", "license.renewed")
		var want catalog.Kind
		for _, k := range catalog.Kinds() {
			if k.Kind == event.LicenseExpiresAtUpdated {
				want = k
			}
		}
		if got := b.exact("#licenseexpiresatupdated-example"); got != want.Example {
			t.Errorf("%s: the example reads %q; want the catalog's", size.name, got)
		}
		fit(b, size.phone, size.width, size.height)
		if w := run(b, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > int(size.width) {
			t.Errorf("%s: the catalog is %dpx wide at %dpx", size.name, w, size.width)
		}
		b.contains(`nav.side a[aria-current="page"]`, "Event catalog")
		b.screenshot("event-catalog-" + size.name)
	}
}
