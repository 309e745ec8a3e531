package api

import (
	"net/http"

	"github.com/heraldhq/herald/internal/licensing"
)

func (a *API) createProduct(w http.ResponseWriter, r *http.Request) error {
	var in licensing.ProductInput
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	p, err := a.licensing.CreateProduct(r.Context(), accountID(r), in)
	if err != nil {
		return licensingError(err, "product")
	}
	return created(w, "/v3/products/"+p.ID, p)
}

func (a *API) listProducts(w http.ResponseWriter, r *http.Request) error {
	p, _, err := listQuery(r)
	if err != nil {
		return err
	}
	out, next, err := a.licensing.Products(r.Context(), accountID(r), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, newList(out, next))
}

func (a *API) getProduct(w http.ResponseWriter, r *http.Request) error {
	p, err := a.licensing.Product(r.Context(), accountID(r), pathID(r, "id"))
	if err != nil {
		return licensingError(err, "product")
	}
	return writeJSON(w, http.StatusOK, p)
}

func (a *API) updateProduct(w http.ResponseWriter, r *http.Request) error {
	id := pathID(r, "id")
	var in licensing.ProductInput
	if err := decodeOn(w, r, &in, "product", func() error { _, err := a.licensing.Product(r.Context(), accountID(r), id); return err }); err != nil {
		return err
	}
	p, err := a.licensing.UpdateProduct(r.Context(), accountID(r), id, in)
	if err != nil {
		return licensingError(err, "product")
	}
	return writeJSON(w, http.StatusOK, p)
}

func (a *API) deleteProduct(w http.ResponseWriter, r *http.Request) error {
	if err := a.licensing.DeleteProduct(r.Context(), accountID(r), pathID(r, "id")); err != nil {
		return licensingError(err, "product")
	}
	return noContent(w)
}
