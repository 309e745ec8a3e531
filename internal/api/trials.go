package api

import (
	"net/http"

	"github.com/heraldhq/herald/internal/licensing"
)

func (a *API) createTrialActivation(w http.ResponseWriter, r *http.Request) error {
	var in licensing.TrialActivationInput
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	t, err := a.licensing.CreateTrialActivation(r.Context(), accountID(r), in)
	if err != nil {
		return licensingError(err, "trial activation")
	}
	return created(w, "/v3/trial-activations/"+t.ID, t)
}

func (a *API) listTrialActivations(w http.ResponseWriter, r *http.Request) error {
	p, ids, err := listQuery(r, "productId")
	if err != nil {
		return err
	}
	out, next, err := a.licensing.TrialActivations(r.Context(), accountID(r), licensing.TrialActivationFilter{ProductID: ids["productId"], Page: p})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, newList(out, next))
}

func (a *API) getTrialActivation(w http.ResponseWriter, r *http.Request) error {
	t, err := a.licensing.TrialActivation(r.Context(), accountID(r), pathID(r, "id"))
	if err != nil {
		return licensingError(err, "trial activation")
	}
	return writeJSON(w, http.StatusOK, t)
}

func (a *API) deleteTrialActivation(w http.ResponseWriter, r *http.Request) error {
	if err := a.licensing.DeleteTrialActivation(r.Context(), accountID(r), pathID(r, "id")); err != nil {
		return licensingError(err, "trial activation")
	}
	return noContent(w)
}
