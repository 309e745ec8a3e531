package api

import (
	"errors"
	"net/http"

	"github.com/heraldhq/herald/internal/licensing"
)

func (a *API) licensingRoutes(h func(string, handler)) {
	h("POST /v3/products", a.createProduct)
	h("GET /v3/products/{id}", a.getProduct)
	h("POST /v3/licenses", a.createLicense)
	h("GET /v3/licenses/{id}", a.getLicense)
}

// licensingError turns the licensing package's errors into problems.
func licensingError(err error, what string) error {
	var inv licensing.InvalidError
	switch {
	case errors.As(err, &inv):
		v := make(Invalid, len(inv))
		for i, f := range inv {
			v[i] = FieldError{f.Field, f.Detail}
		}
		return v.Err()
	case licensing.IsNotFound(err):
		return notFound(what)
	}
	return err
}

func (a *API) createProduct(w http.ResponseWriter, r *http.Request) error {
	var in licensing.ProductInput
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	p, err := a.licensing.CreateProduct(r.Context(), accountID(r), in)
	if err != nil {
		return licensingError(err, "product")
	}
	return writeJSON(w, http.StatusCreated, p.View())
}

func (a *API) getProduct(w http.ResponseWriter, r *http.Request) error {
	p, err := a.licensing.Product(r.Context(), accountID(r), r.PathValue("id"))
	if err != nil {
		return licensingError(err, "product")
	}
	return writeJSON(w, http.StatusOK, p.View())
}

func (a *API) createLicense(w http.ResponseWriter, r *http.Request) error {
	var in licensing.LicenseInput
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	l, err := a.licensing.CreateLicense(r.Context(), accountID(r), in)
	if err != nil {
		return licensingError(err, "license")
	}
	return writeJSON(w, http.StatusCreated, l.View())
}

func (a *API) getLicense(w http.ResponseWriter, r *http.Request) error {
	l, err := a.licensing.License(r.Context(), accountID(r), r.PathValue("id"))
	if err != nil {
		return licensingError(err, "license")
	}
	return writeJSON(w, http.StatusOK, l.View())
}
