package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/licensing"
	"github.com/heraldhq/herald/internal/store"
)

// licensingRoutes registers the licensing resources, the sources of events;
// one file per resource holds the handlers.
func (a *API) licensingRoutes(h func(string, handler)) {
	h("POST /v3/products", a.createProduct)
	h("GET /v3/products", a.listProducts)
	h("GET /v3/products/{id}", a.getProduct)
	h("PATCH /v3/products/{id}", a.updateProduct)
	h("DELETE /v3/products/{id}", a.deleteProduct)

	h("POST /v3/users", a.createUser)
	h("GET /v3/users", a.listUsers)
	h("GET /v3/users/{id}", a.getUser)
	h("PATCH /v3/users/{id}", a.updateUser)
	h("DELETE /v3/users/{id}", a.deleteUser)

	h("POST /v3/licenses", a.createLicense)
	h("GET /v3/licenses", a.listLicenses)
	h("GET /v3/licenses/{id}", a.getLicense)
	h("PATCH /v3/licenses/{id}", a.updateLicense)
	h("DELETE /v3/licenses/{id}", a.deleteLicense)
	h("POST /v3/licenses/{id}/renew", a.renewLicense)
	h("PATCH /v3/licenses/{id}/expires-at", a.setLicenseExpiresAt)

	h("POST /v3/activations", a.createActivation)
	h("GET /v3/activations", a.listActivations)
	h("GET /v3/activations/{id}", a.getActivation)
	h("DELETE /v3/activations/{id}", a.deleteActivation)

	h("POST /v3/releases", a.createRelease)
	h("GET /v3/releases", a.listReleases)
	h("GET /v3/releases/{id}", a.getRelease)
	h("DELETE /v3/releases/{id}", a.deleteRelease)
	h("POST /v3/releases/{id}/files", a.createReleaseFile)
	h("DELETE /v3/releases/{id}/files/{fileId}", a.deleteReleaseFile)

	h("POST /v3/trial-activations", a.createTrialActivation)
	h("GET /v3/trial-activations", a.listTrialActivations)
	h("GET /v3/trial-activations/{id}", a.getTrialActivation)
	h("DELETE /v3/trial-activations/{id}", a.deleteTrialActivation)
}

// licensingError turns the licensing package's errors into problems; what
// names the resource of the call, for a 404.
func licensingError(err error, what string) error {
	var inv licensing.InvalidError
	var c licensing.ConflictError
	switch {
	case errors.As(err, &inv):
		v := make(Invalid, len(inv))
		for i, f := range inv {
			v[i] = FieldError{f.Field, f.Detail}
		}
		return v.Err()
	case errors.As(err, &c):
		return problem(http.StatusConflict, "conflict", "Conflict", c.Detail)
	case licensing.IsNotFound(err):
		return notFound(what)
	}
	return err
}

// pathID reads an id from the path as herald writes ids, lowercase, so that
// any casing of a UUID finds its resource.
func pathID(r *http.Request, name string) string { return strings.ToLower(r.PathValue(name)) }

// queryID reads an optional id filter from the query: "" when absent, the
// lowercase UUID when valid, and an entry in v otherwise.
func queryID(r *http.Request, name string, v *Invalid) string {
	s := r.URL.Query().Get(name)
	if s == "" {
		return ""
	}
	u, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		v.Add(name, "must be a UUID")
		return ""
	}
	return u.String()
}

// listQuery reads the page and the id filters of a list call.
func listQuery(r *http.Request, filters ...string) (store.Page, map[string]string, error) {
	p, err := page(r)
	if err != nil {
		return p, nil, err
	}
	var v Invalid
	ids := map[string]string{}
	for _, f := range filters {
		ids[f] = queryID(r, f, &v)
	}
	return p, ids, v.Err()
}

// decodeOn decodes the body of a call on the resource in the path. The API
// reference checks that resource (404) before the fields (422), so a body
// whose fields fail to decode answers 404 when exists reports the resource
// missing.
func decodeOn(w http.ResponseWriter, r *http.Request, v any, what string, exists func() error) error {
	err := decode(w, r, v, false)
	var p *Problem
	if errors.As(err, &p) && p.Status == http.StatusUnprocessableEntity {
		if e := exists(); e != nil {
			return licensingError(e, what)
		}
	}
	return err
}

// created answers 201 with the new resource and its Location.
func created(w http.ResponseWriter, location string, v any) error {
	w.Header().Set("Location", location)
	return writeJSON(w, http.StatusCreated, v)
}

func noContent(w http.ResponseWriter) error {
	w.WriteHeader(http.StatusNoContent)
	return nil
}
