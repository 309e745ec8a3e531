package e2e_test

import (
	"bytes"
	"image"
	"image/png"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestBrowserRecoveryCardAndRotationRow: on a webhook's page, at the
// portal's usual desktop widths, the card of a recovery has even padding
// (its heading does not push its top down), its bar spans the card and
// fills in proportion to what was sent (nothing while the first resend is
// held, all of it once done); and the token rotation row (label, overlap,
// button) reads on one line, its label never broken over lines.
func TestBrowserRecoveryCardAndRotationRow(t *testing.T) {
	t.Parallel()
	// The attempt time-out outlasts a busy machine's page loads: the held
	// resends must still be running when the page is read, not timed out.
	h := heraldtest.Start(t, heraldtest.Options{Delivery: delivery.Config{MaxAttempts: 1, SuspendAfter: 2, AttemptTimeout: 5 * time.Minute}})
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(http.StatusServiceUnavailable, "down")
	hook := h.CreateWebhook("Billing", rcv.URL, "license.created")
	page := "/webhooks/" + hook.ID
	for range 2 {
		h.CreateLicense(nil)
	}
	heraldtest.Eventually(t, 30*time.Second, "the webhook suspended", func() bool { return h.Webhook(hook.ID).Status == "Suspended" })
	b := signInTab(t, h)

	// The rotation row, before any recovery. (Opening a page runs axe at
	// both sizes and leaves the tab's own, so each width is set after.)
	b.open(page)
	for _, width := range []int64{1280, 1440, 1024} {
		b.do(chromedp.EmulateViewport(width, 900))
		rotationOnOneLine(t, b, width)
	}
	b.size(true)
	b.open(page)
	if lines := lineCount(b, "#rotation-state label"); lines != 1 {
		t.Errorf("phone: the rotation label runs over %d lines; want 1", lines)
	}
	b.screenshot("details-rotation-phone")
	b.size(false)

	// A recovery whose resends are held: running, nothing sent yet.
	held := rcv.Hold(t)
	b.open(page)
	b.click("#recover-button")
	held.Wait(t, 30*time.Second, "the recovery's first resend")
	b.open(page)
	b.contains("#recovery-status", "Running: 0 of 2 sent")
	cardPadding(t, b)
	if got := barFill(t, b); got > 0.02 {
		t.Errorf("running, 0 of 2 sent: the bar is %.0f%% filled; want empty", got*100)
	}
	b.screenshot("details-recovery-running")

	held.Release()
	heraldtest.Eventually(t, 30*time.Second, "the recovery done", func() bool {
		b.open(page)
		return strings.Contains(b.text("#recovery-status"), "Done: 2 of 2 delivered")
	})
	cardPadding(t, b)
	if got := barFill(t, b); got < 0.98 {
		t.Errorf("done, 2 of 2 sent: the bar is %.0f%% filled; want full", got*100)
	}
	b.screenshot("details-recovery-done")
}

// rotationOnOneLine checks that the rotation form's label, select and button
// sit on one line: their tops within a few pixels, the label one line tall.
func rotationOnOneLine(t *testing.T, b *tab, width int64) {
	t.Helper()
	tops := run(b, chromedp.Evaluate[[]float64](`[...document.querySelectorAll("#rotation-state label, #rotation-state select, #rotation-state button")].map(e => e.getBoundingClientRect().top + e.getBoundingClientRect().height/2)`))
	if len(tops) != 3 {
		t.Fatalf("%dpx: %d parts of the rotation row; want label, select and button", width, len(tops))
	}
	for _, top := range tops[1:] {
		if math.Abs(top-tops[0]) > 4 {
			t.Errorf("%dpx: the rotation row's parts are centred at %v; want one line", width, tops)
			break
		}
	}
	if lines := lineCount(b, "#rotation-state label"); lines != 1 {
		t.Errorf("%dpx: the rotation label runs over %d lines; want 1", width, lines)
	}
	if h := run(b, chromedp.Evaluate[float64](`document.querySelector("#rotation-state").getBoundingClientRect().height`)); h > 48 {
		t.Errorf("%dpx: the rotation row is %.0fpx tall; want one line", width, h)
	}
}

// lineCount is how many lines an element's text is laid out on.
func lineCount(b *tab, css string) int {
	b.t.Helper()
	return run(b, chromedp.Evaluate[int](`(() => { const r = document.createRange(); r.selectNodeContents(document.querySelector(`+jsString(css)+`));
		return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size })()`))
}

// cardPadding checks that the recovery card's content starts and ends as far
// from its border as its padding says, top and bottom alike.
func cardPadding(t *testing.T, b *tab) {
	t.Helper()
	got := run(b, chromedp.Evaluate[[]float64](`(() => {
		const card = document.querySelector("#recovery-progress"), s = getComputedStyle(card), r = card.getBoundingClientRect();
		const kids = [...card.children], first = kids[0].getBoundingClientRect(), last = kids[kids.length-1].getBoundingClientRect();
		return [parseFloat(s.paddingTop), parseFloat(s.paddingLeft), first.top - r.top - parseFloat(s.borderTopWidth), r.bottom - last.bottom - parseFloat(s.borderBottomWidth),
			document.querySelector("#recovery-progress progress").getBoundingClientRect().width, card.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)] })()`))
	padTop, padLeft, top, bottom, bar, inner := got[0], got[1], got[2], got[3], got[4], got[5]
	if padTop < 12 || padLeft < 12 {
		t.Errorf("the recovery card's padding is %.0fpx top, %.0fpx left; want at least 12", padTop, padLeft)
	}
	if math.Abs(top-padTop) > 1 || math.Abs(bottom-padTop) > 1 {
		t.Errorf("the recovery card's content is %.0fpx from its top and %.0fpx from its bottom; want its padding, %.0fpx, at both", top, bottom, padTop)
	}
	if math.Abs(bar-inner) > 1 {
		t.Errorf("the recovery bar is %.0fpx wide in a card %.0fpx wide inside; want it across the card", bar, inner)
	}
}

// barFill is the share of the recovery bar's width drawn in its fill
// colour, read from the rendered pixels along its middle.
func barFill(t *testing.T, b *tab) float64 {
	t.Helper()
	shot := run(b, chromedp.Screenshot(chromedp.CSS("#recovery-progress progress")))
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the bar's screenshot: %v", err)
	}
	return filled(img)
}

// filled is the share of an image's middle row in the fill colour, the
// portal's primary blue (#3b5bdb), give or take anti-aliasing.
func filled(img image.Image) float64 {
	r := img.Bounds()
	y := (r.Min.Y + r.Max.Y) / 2
	n := 0
	for x := r.Min.X; x < r.Max.X; x++ {
		cr, cg, cb, _ := img.At(x, y).RGBA()
		if near(cr>>8, 0x3b) && near(cg>>8, 0x5b) && near(cb>>8, 0xdb) {
			n++
		}
	}
	return float64(n) / float64(r.Dx())
}

func near(got uint32, want int) bool { return math.Abs(float64(int(got)-want)) <= 24 }
