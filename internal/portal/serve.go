package portal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/accesslog"
	"github.com/heraldhq/herald/internal/admission"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// handlerFunc is a page or action that returns its error; serve renders it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// httpError is an error with the status and the message a person sees. Err,
// when set, goes to the log only: it may hold internals.
type httpError struct {
	Code int
	Msg  string
	Err  error
}

func (e *httpError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %v", e.Code, e.Msg, e.Err)
	}
	return fmt.Sprintf("%d %s", e.Code, e.Msg)
}

func (e *httpError) Unwrap() error { return e.Err }

// The largest form bodies the portal reads: its forms hold a few short
// fields, and the sign-in form, open to anyone, fewer still.
const (
	maxForm       = 64 << 10
	maxSignInForm = 8 << 10
)

// formError answers a form that could not be read: too large (413), too
// slow, cut by the server's read deadline (408), or malformed (400).
func formError(err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case admission.IsBusy(err):
		return &httpError{Code: http.StatusServiceUnavailable, Msg: "herald is busy reading other requests. Nothing was changed; send the form again in a moment.", Err: err}
	case errors.As(err, &tooLarge):
		return &httpError{Code: http.StatusRequestEntityTooLarge, Msg: "The form is too large to read.", Err: err}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &httpError{Code: http.StatusRequestTimeout, Msg: "The form did not arrive in time.", Err: err}
	}
	return &httpError{Code: http.StatusBadRequest, Msg: "The form could not be read.", Err: err}
}

// serve runs fn and renders its error as a page: the status and message of
// an httpError, 404 for store.ErrNotFound, 503 with Retry-After for
// store.ErrStorageFull and while the database is unavailable
// (store.Unavailable), and otherwise a 500 whose cause is logged and not
// shown.
func (h *handler) serve(fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accesslog.SetRoute(r)
		if r.Body != nil {
			limit := int64(maxForm)
			if r.URL.Path == "/signin" {
				limit = maxSignInForm
			}
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/signature") {
				limit = maxSignatureForm
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		r = r.WithContext(context.WithValue(r.Context(), sessionHeld{}, new(store.Session)))
		err := checkURL(r)
		if err == nil {
			err = fn(w, r)
		}
		if err == nil {
			return
		}
		var he *httpError
		switch {
		case errors.As(err, &he):
			if he.Code >= 500 {
				h.log.Error("portal request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			}
		case errors.Is(err, store.ErrNotFound):
			he = &httpError{Code: http.StatusNotFound, Msg: "There is nothing here. It may have been deleted."}
		case errors.Is(err, store.ErrStorageFull):
			// The store has logged it, with what to do, once per
			// store.FullLogEvery: a line per request would flood the log.
			w.Header().Set("Retry-After", strconv.Itoa(int(store.FullRetryAfter.Seconds())))
			he = &httpError{Code: http.StatusServiceUnavailable,
				Msg: "herald's database disk is full, so nothing was changed. Try again in a few minutes: whoever runs herald must free space, and its log says so."}
		case store.Unavailable(err):
			// Nothing was changed (a transaction is all or nothing); a retry
			// a moment later works.
			h.log.Warn("portal request refused: the database is unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
			w.Header().Set("Retry-After", "2")
			he = &httpError{Code: http.StatusServiceUnavailable,
				Msg: "herald's database did not answer in time, so nothing was changed. Try again in a moment."}
		default:
			h.log.Error("portal request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			he = &httpError{Code: http.StatusInternalServerError, Msg: "Something went wrong on our side; the server log has the details."}
		}
		data := errorPage{Code: he.Code, Status: http.StatusText(he.Code), Message: he.Msg}
		if rerr := h.render(w, r, he.Code, "error", data); rerr != nil {
			h.log.Error("render error page", "err", rerr)
			http.Error(w, he.Msg, he.Code)
		}
	})
}

// checkURL refuses control characters in the path and the query before any
// page passes them to the store, where PostgreSQL would fail on a NUL: no
// page or id holds one.
func checkURL(r *http.Request) error {
	if validator.SingleLine(r.URL.Path) != "" {
		return &httpError{Code: http.StatusNotFound, Msg: "There is no page at this address."}
	}
	for _, values := range r.URL.Query() {
		for _, s := range values {
			if validator.SingleLine(s) != "" {
				return &httpError{Code: http.StatusBadRequest, Msg: "This address holds characters no page uses."}
			}
		}
	}
	return nil
}

type errorPage struct {
	Code    int
	Status  string
	Message string
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request, _ store.Session) error {
	return &httpError{Code: http.StatusNotFound, Msg: "There is no page at this address."}
}

// home sends a signed-in owner to the webhooks.
func (h *handler) home(w http.ResponseWriter, r *http.Request, _ store.Session) error {
	return redirect(w, r, "/webhooks")
}

// redirect answers 303 See Other, the answer to a POST that worked.
func redirect(w http.ResponseWriter, r *http.Request, to string) error {
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// localPath returns p when it is a path on this site, else fallback, so a
// "next" field cannot send anyone elsewhere.
func localPath(p, fallback string) string {
	if p == "" || !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n") {
		return fallback
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return fallback
	}
	return p
}

// withQuery adds key=value to a local path.
func withQuery(p, key, value string) string {
	sep := "?"
	if strings.Contains(p, "?") {
		sep = "&"
	}
	return p + sep + url.QueryEscape(key) + "=" + url.QueryEscape(value)
}
