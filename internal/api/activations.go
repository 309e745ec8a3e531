package api

import (
	"net/http"

	"github.com/heraldhq/herald/internal/licensing"
)

// createActivation fires activation.created, and license.first-activated
// on a license's first activation ever; never license.updated.
func (a *API) createActivation(w http.ResponseWriter, r *http.Request) error {
	var in licensing.ActivationInput
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	act, err := a.licensing.CreateActivation(r.Context(), accountID(r), in)
	if err != nil {
		return licensingError(err, "activation")
	}
	return created(w, "/v3/activations/"+act.ID, act)
}

func (a *API) listActivations(w http.ResponseWriter, r *http.Request) error {
	p, ids, err := listQuery(r, "licenseId")
	if err != nil {
		return err
	}
	out, next, err := a.licensing.Activations(r.Context(), accountID(r), licensing.ActivationFilter{LicenseID: ids["licenseId"], Page: p})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, newList(out, next))
}

func (a *API) getActivation(w http.ResponseWriter, r *http.Request) error {
	act, err := a.licensing.Activation(r.Context(), accountID(r), pathID(r, "id"))
	if err != nil {
		return licensingError(err, "activation")
	}
	return writeJSON(w, http.StatusOK, act)
}

// deleteActivation fires activation.deleted, the only way it fires.
func (a *API) deleteActivation(w http.ResponseWriter, r *http.Request) error {
	if err := a.licensing.DeleteActivation(r.Context(), accountID(r), pathID(r, "id")); err != nil {
		return licensingError(err, "activation")
	}
	return noContent(w)
}
