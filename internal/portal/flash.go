package portal

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/store"
)

// flash is what a POST's answer has to say on the page it redirects to.
// It is kept on the server, sealed for the browser that sent the form
// (store.Flash), and shown once: a refresh, a bookmark or Back shows the
// page as it is, never the confirmation again, and never repeats the action.
type flash struct {
	// Status is the page's status when it shows this flash: a refused
	// form's page answers 422 (or 409, 429) as the POST once did.
	Status int         `json:",omitempty"`
	Notice string      `json:",omitempty"` // a confirmation, above the page
	Error  string      `json:",omitempty"` // why an action was refused
	Form   url.Values  `json:",omitempty"` // the values a refused or interrupted form held
	Errors fieldErrors `json:",omitempty"`

	Test    *delivery.TestResult `json:",omitempty"` // the result of the Test just sent
	Reveal  bool                 `json:",omitempty"` // show the webhook's token
	Resent  int                  `json:",omitempty"` // the attempt a resend just made
	Created *store.APIToken      `json:",omitempty"` // an API token just created,
	Invited *store.Link          `json:",omitempty"` // or an invitation just made,
	Secret  string               `json:",omitempty"` // and its secret (the invitation's link), shown this once
	// PullToken says Secret is a pull token just made for the webhook
	// whose page shows it.
	PullToken bool `json:",omitempty"`
}

// merge lays g over f: a page may have two flashes waiting (a confirmation
// and a note that a form had already been sent).
func (f flash) merge(g flash) flash {
	if f.Notice != "" && g.Notice != "" {
		g.Notice = f.Notice + " " + g.Notice
	}
	b, _ := json.Marshal(g)
	json.Unmarshal(b, &f) // only g's set fields replace f's
	if g.Notice != "" {
		f.Notice = g.Notice
	}
	return f
}

type flashKey struct{}

// flashFrom is the flash a GET took for its page; the zero flash if none.
func flashFrom(ctx context.Context) flash {
	f, _ := ctx.Value(flashKey{}).(flash)
	return f
}

// flashSeal derives the key that seals a browser's flashes from the secret
// the browser holds (its session id, or before sign-in its sign-in
// cookie); the store keeps only the secret's hash, so a copy of the
// database opens no flash, and a secret shown once stays unreadable there.
func flashSeal(secret string) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("herald portal flash"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// pagePath is the page part of a local address: flashes belong to a path,
// whatever its query.
func pagePath(to string) string {
	p, _, _ := strings.Cut(to, "?")
	return p
}

// addFlash keeps f for the page at path, for the browser holding secret.
func (h *handler) addFlash(ctx context.Context, secret, path string, f flash) error {
	aead, err := flashSeal(secret)
	if err != nil {
		return fmt.Errorf("seal flash: %w", err)
	}
	body, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode flash: %w", err)
	}
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	// The path is sealed in, so a flash cannot be shown on another page.
	sealed := aead.Seal(nonce, nonce, body, []byte(path))
	return h.store.AddFlash(ctx, store.Flash{Holder: hashID(secret), Path: path, Body: sealed})
}

// takeFlash takes the browser's flashes for path (all its flashes when
// path is ""), merged in the order they were made.
func (h *handler) takeFlash(ctx context.Context, secret, path string) (flash, error) {
	var out flash
	fs, err := h.store.TakeFlashes(ctx, hashID(secret), path)
	if err != nil || len(fs) == 0 {
		return out, err
	}
	for _, sf := range fs {
		f, err := openFlash(secret, sf)
		if err != nil {
			return flash{}, err
		}
		out = out.merge(f)
	}
	return out, nil
}

func openFlash(secret string, sf store.Flash) (flash, error) {
	aead, err := flashSeal(secret)
	if err != nil {
		return flash{}, fmt.Errorf("open flash: %w", err)
	}
	n := aead.NonceSize()
	if len(sf.Body) < n {
		return flash{}, errors.New("open flash: too short")
	}
	body, err := aead.Open(nil, sf.Body[:n], sf.Body[n:], []byte(sf.Path))
	if err != nil {
		return flash{}, fmt.Errorf("open flash: %w", err)
	}
	var f flash
	if err := json.Unmarshal(body, &f); err != nil {
		return flash{}, fmt.Errorf("decode flash: %w", err)
	}
	return f, nil
}

// moveFlashes hands the flashes kept for a browser before sign-in (the
// form an ended session interrupted) to its new session.
func (h *handler) moveFlashes(ctx context.Context, from, to string) error {
	fs, err := h.store.TakeFlashes(ctx, hashID(from), "")
	if err != nil {
		return err
	}
	for _, sf := range fs {
		if sf.Path == "/signin" {
			continue
		}
		f, err := openFlash(from, sf)
		if err != nil {
			return err
		}
		if err := h.addFlash(ctx, to, sf.Path, f); err != nil {
			return err
		}
	}
	return nil
}

// sessionSecret is the session id the request's cookie holds; signedIn has
// checked it.
func (h *handler) sessionSecret(r *http.Request) string {
	c, err := r.Cookie(h.cookieName(r, sessionCookie))
	if err != nil {
		return ""
	}
	return c.Value
}

// redirectWith answers a signed-in POST: f waits for the page at to, and
// the browser is sent there (post/redirect/get).
func (h *handler) redirectWith(w http.ResponseWriter, r *http.Request, to string, f flash) error {
	if err := h.addFlash(r.Context(), h.sessionSecret(r), pagePath(to), f); err != nil {
		return err
	}
	return redirect(w, r, to)
}

// refused answers a form refused for its values: the page at to shows them
// again with the errors, answering 422.
func (h *handler) refused(w http.ResponseWriter, r *http.Request, to string, errs fieldErrors) error {
	return h.redirectWith(w, r, to, flash{Status: http.StatusUnprocessableEntity, Form: typed(r.PostForm), Errors: errs})
}

// typed is what a person typed into a form: its fields without the
// portal's own hidden ones.
func typed(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		switch k {
		case "csrf", "form", "page":
			continue
		}
		out[k] = append([]string(nil), vs...)
	}
	return out
}
