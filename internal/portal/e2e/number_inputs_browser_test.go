package e2e_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/validator"
)

// TestBrowserNumberInputsLookLikeTheOtherFields: the two number inputs
// (Settings' expiring-soon lead time, the webhook form's rate limit) are
// drawn as the text fields beside them are, border, corners, padding,
// height and width alike, at a desktop's width and a phone's; a screenshot
// of each is saved at both. The hints beside them say what herald does.
func TestBrowserNumberInputsLookLikeTheOtherFields(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := signInTab(t, h)
	inputs := []struct{ name, page, number, text string }{
		{"lead-time", "/account", "#expiringSoonLeadHours", "#notificationEmail"},
		{"rate-limit", "/webhooks/new", "#rateLimit", "#name"},
	}
	for _, in := range inputs {
		// Opening a page runs axe at both sizes and leaves the tab's own,
		// so each size is set after.
		b.open(in.page)
		if in.name == "lead-time" {
			// The notification address hears of a webhook turning
			// Unhealthy too, not only of its suspension.
			b.contains("#notificationEmail-hint", "turns Unhealthy", "suspended")
		} else {
			// The events are chosen above the filter, not below it; the
			// token's rule is the one the API and the command line say.
			b.contains("#filter-hint", "every event chosen above")
			b.contains("#token-hint", validator.TokenRule, validator.StandardTokenRule)
		}
		for _, size := range []struct {
			name  string
			phone bool
		}{{"desktop", false}, {"phone", true}} {
			b.size(size.phone)
			// border, radius, padding, height, width of each.
			style := func(css string) []float64 {
				return run(b, chromedp.Evaluate[[]float64](`(() => { const e = document.querySelector(`+jsString(css)+`), s = getComputedStyle(e), r = e.getBoundingClientRect();
					return [parseFloat(s.borderTopWidth), parseFloat(s.borderTopLeftRadius), parseFloat(s.paddingLeft), parseFloat(s.paddingTop), r.height, r.width] })()`))
			}
			got, want := style(in.number), style(in.text)
			for i, what := range []string{"border", "corner radius", "left padding", "top padding", "height", "width"} {
				if d := got[i] - want[i]; d > 1 || d < -1 {
					t.Errorf("%s, %s: %s's %s is %.1fpx; want %.1fpx, as %s's", size.name, in.page, in.number, what, got[i], want[i], in.text)
				}
			}
			shot := run(b, chromedp.Screenshot(chromedp.CSS(in.number)))
			path := filepath.Join(b.shots, "number-input-"+in.name+"-"+size.name+".png")
			if err := os.MkdirAll(b.shots, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", path)
			b.screenshot("number-input-" + in.name + "-page-" + size.name)
		}
	}
}
