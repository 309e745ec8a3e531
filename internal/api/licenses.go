package api

import (
	"net/http"

	"github.com/heraldhq/herald/internal/licensing"
)

func (a *API) createLicense(w http.ResponseWriter, r *http.Request) error {
	var in licensing.LicenseInput
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	l, err := a.licensing.CreateLicense(r.Context(), accountID(r), in)
	if err != nil {
		return licensingError(err, "license")
	}
	return created(w, "/v3/licenses/"+l.ID, l)
}

func (a *API) listLicenses(w http.ResponseWriter, r *http.Request) error {
	p, ids, err := listQuery(r, "productId", "userId")
	if err != nil {
		return err
	}
	out, next, err := a.licensing.Licenses(r.Context(), accountID(r),
		licensing.LicenseFilter{ProductID: ids["productId"], UserID: ids["userId"], Page: p})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, newList(out, next))
}

func (a *API) getLicense(w http.ResponseWriter, r *http.Request) error {
	l, err := a.licensing.License(r.Context(), accountID(r), pathID(r, "id"))
	if err != nil {
		return licensingError(err, "license")
	}
	return writeJSON(w, http.StatusOK, l)
}

func (a *API) licenseExists(r *http.Request, id string) func() error {
	return func() error { _, err := a.licensing.License(r.Context(), accountID(r), id); return err }
}

// updateLicense is the generic change; it fires license.updated.
func (a *API) updateLicense(w http.ResponseWriter, r *http.Request) error {
	id := pathID(r, "id")
	var in licensing.LicensePatch
	if err := decodeOn(w, r, &in, "license", a.licenseExists(r, id)); err != nil {
		return err
	}
	l, err := a.licensing.UpdateLicense(r.Context(), accountID(r), id, in)
	if err != nil {
		return licensingError(err, "license")
	}
	return writeJSON(w, http.StatusOK, l)
}

// renewLicense takes no body; it fires license.renewed.
func (a *API) renewLicense(w http.ResponseWriter, r *http.Request) error {
	l, err := a.licensing.RenewLicense(r.Context(), accountID(r), pathID(r, "id"))
	if err != nil {
		return licensingError(err, "license")
	}
	return writeJSON(w, http.StatusOK, l)
}

// setLicenseExpiresAt fires license.expiresAt.updated.
func (a *API) setLicenseExpiresAt(w http.ResponseWriter, r *http.Request) error {
	id := pathID(r, "id")
	var in licensing.ExpiresAtInput
	if err := decodeOn(w, r, &in, "license", a.licenseExists(r, id)); err != nil {
		return err
	}
	l, err := a.licensing.SetLicenseExpiresAt(r.Context(), accountID(r), id, in)
	if err != nil {
		return licensingError(err, "license")
	}
	return writeJSON(w, http.StatusOK, l)
}

// deleteLicense fires license.deleted; the activations go silently.
func (a *API) deleteLicense(w http.ResponseWriter, r *http.Request) error {
	if err := a.licensing.DeleteLicense(r.Context(), accountID(r), pathID(r, "id")); err != nil {
		return licensingError(err, "license")
	}
	return noContent(w)
}
