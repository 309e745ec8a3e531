package e2e_test

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// chromiumPath is Debian's Chromium, or the browser HERALD_TEST_CHROMIUM
// names; without one the browser tests skip (and fail under CI=true).
func chromiumPath(t *testing.T) string {
	t.Helper()
	heraldtest.SkipShort(t, "starts Chromium")
	path := heraldtest.Env("HERALD_TEST_CHROMIUM")
	if path == "" {
		for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
	}
	heraldtest.SkipUnless(t, path != "", "no Chromium found: install chromium or set HERALD_TEST_CHROMIUM")
	return path
}

// tab is one headless Chromium tab on a herald, with helpers that fail the
// test on error.
type tab struct {
	t     *testing.T
	ctx   context.Context
	base  string
	shots string      // where screenshots go
	phone bool        // the viewport is a phone's (390×844), else a desktop's (1280×900)
	saw   chan string // what pages told through the heraldTestSaw binding (see expect)
}

// chromium is the one Chromium process the package's browser tests share,
// started by the first of them: each tab opens in a browser context of its
// own, which keeps its cookies, storage and cache from every other, as a
// new profile would. A Chromium costs about a CPU-second to start, and the
// package has a dozen browser tests running at once.
var chromium struct {
	once sync.Once
	ctx  context.Context // the browser's first tab, from which tabs are made
	stop func()
	err  error
}

// TestMain stops the shared Chromium once every test has run (the kernel
// kills it too if the test binary dies: chromedp starts it with Pdeathsig).
func TestMain(m *testing.M) {
	code := m.Run()
	if chromium.stop != nil {
		chromium.stop()
	}
	os.Exit(code)
}

// browserContext returns the shared Chromium, starting it on first use.
func browserContext(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	chromium.once.Do(func() {
		dir, err := os.MkdirTemp("", "herald-chromium")
		if err != nil {
			chromium.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.UserDataDir(dir),
			chromedp.WindowSize(1280, 900),
			// The machine may have no network: nothing may try to reach out.
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("no-proxy-server", true),
		)
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelBrowser := chromedp.NewContext(alloc)
		chromium.ctx = ctx
		chromium.stop = func() { cancelBrowser(); cancelAlloc(); os.RemoveAll(dir) }
		if err := chromedp.Do(ctx); err != nil { // starts it
			chromium.err = fmt.Errorf("start Chromium: %w", err)
		}
	})
	if chromium.err != nil {
		t.Fatal(chromium.err)
	}
	return chromium.ctx
}

func newTab(t *testing.T, h *heraldtest.Herald) *tab {
	t.Helper()
	ctx, cancelTab := chromedp.NewContext(browserContext(t), chromedp.WithNewBrowserContext())
	// A bound for a stuck browser, not a pace: on a starved machine (a
	// load of 30 on two cores) a whole journey took more than 3 minutes.
	ctx, cancelTime := context.WithTimeout(ctx, 15*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab() })
	b := &tab{t: t, ctx: ctx, base: h.URL, shots: heraldtest.Env("HERALD_SCREENSHOTS")}
	if b.shots == "" {
		b.shots = t.TempDir()
	}
	b.do(chromedp.EmulateViewport(1280, 900))
	return b
}

// size sets the viewport: a phone's (390×844, scaled 2×) or a desktop's.
func (b *tab) size(phone bool) {
	b.t.Helper()
	b.phone = phone
	b.do(viewport(phone))
}

func viewport(phone bool) chromedp.Action[chromedp.Void] {
	if phone {
		return chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)
	}
	return chromedp.EmulateViewport(1280, 900)
}

// axeSource is axe-core (testdata/axe/README.md says which and from where).
//
//go:embed testdata/axe/axe.min.js
var axeSource string

// axeRun loads axe-core into the page unless it is there already, checks
// the whole page against every rule axe runs by default, and returns one
// line per violation with the elements it names.
const axeRun = `(async () => {
  const r = await axe.run(document, {resultTypes: ["violations"]});
  return r.violations.map(v => v.id + " (" + v.impact + "): " + v.help + "\n    " +
    v.nodes.slice(0, 6).map(n => n.target.join(" ") + ": " + (n.failureSummary || "").replace(/\s+/g, " ")).join("\n    "));
})()`

// accessible fails the test for every violation axe-core finds on the
// current page, at both sizes, and leaves the viewport as it found it.
// Every navigation of the browser tests calls it.
func (b *tab) accessible() {
	b.t.Helper()
	where := b.path()
	for _, phone := range []bool{b.phone, !b.phone} {
		b.do(viewport(phone))
		loaded, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`typeof window.axe === "object"`))
		if err == nil && !loaded {
			_, err = chromedp.Run(b.ctx, chromedp.Evaluate[bool](axeSource+";true"))
		}
		var found []string
		if err == nil {
			found, err = chromedp.Run(b.ctx, chromedp.Evaluate[[]string](axeRun, chromedp.EvalAwaitPromise))
		}
		if err != nil {
			b.t.Fatalf("axe on %s: %v", where, err)
		}
		size := "desktop"
		if phone {
			size = "phone"
		}
		for _, v := range found {
			b.t.Errorf("axe, %s at %s size: %s", where, size, v)
		}
	}
	b.do(viewport(b.phone))
}

// do runs steps that return nothing.
func (b *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// open loads a page of the herald and returns its status.
func (b *tab) open(path string) int64 {
	b.t.Helper()
	resp, err := chromedp.Run(b.ctx, chromedp.NavigateResponse(b.base+path))
	if err != nil {
		b.t.Fatalf("open %s: %v", path, err)
	}
	b.accessible()
	return resp.Status
}

// follow runs steps that navigate (a click on a link or a submit button)
// and waits for the new page; it returns the page's status.
func (b *tab) follow(steps ...chromedp.Action[chromedp.Void]) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute) // no navigation at all would wait forever
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, steps...)
	if err != nil {
		b.t.Fatalf("browser: %v", err)
	}
	b.accessible()
	return resp.Status
}

// click clicks the element css selects and waits for the page it leads to.
func (b *tab) click(css string) int64 {
	b.t.Helper()
	return b.follow(chromedp.Click(chromedp.CSS(css)))
}

func run[T any](b *tab, a chromedp.Action[T]) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, a)
	if err != nil {
		b.t.Fatalf("browser: %v", err)
	}
	return v
}

// text is the visible text of the first element css selects.
func (b *tab) text(css string) string {
	b.t.Helper()
	return strings.TrimSpace(run(b, chromedp.Text(chromedp.CSS(css))))
}

// exact is the text content of an element, byte for byte.
func (b *tab) exact(css string) string {
	b.t.Helper()
	return run(b, chromedp.TextContent(chromedp.CSS(css)))
}

func (b *tab) value(css string) string {
	b.t.Helper()
	return run(b, chromedp.Value(chromedp.CSS(css)))
}

func (b *tab) count(css string) int {
	b.t.Helper()
	return run(b, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(css)+`).length`))
}

func (b *tab) path() string {
	b.t.Helper()
	return strings.TrimPrefix(run(b, chromedp.Location()), b.base)
}

// contains fails the test unless the element's visible text holds each want.
func (b *tab) contains(css string, want ...string) {
	b.t.Helper()
	got := b.text(css)
	for _, w := range want {
		if !strings.Contains(got, w) {
			b.t.Errorf("%s reads %q; want it to contain %q", css, got, w)
		}
	}
}

// screenshot saves the whole page as a PNG to $HERALD_SCREENSHOTS (CI keeps
// that folder), or to the test's temporary folder.
func (b *tab) screenshot(name string) {
	b.t.Helper()
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		b.t.Fatal(err)
	}
	png := run(b, chromedp.FullScreenshot(100))
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// set sets a field's value as if typed over, firing input and change.
func (b *tab) set(css, value string) {
	b.t.Helper()
	run(b, chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+jsString(css)+`); e.value = `+jsString(value)+
		`; e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true})); return true })()`))
}
