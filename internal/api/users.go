package api

import (
	"net/http"

	"github.com/heraldhq/herald/internal/licensing"
)

func (a *API) createUser(w http.ResponseWriter, r *http.Request) error {
	var in licensing.UserInput
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	u, err := a.licensing.CreateUser(r.Context(), accountID(r), in)
	if err != nil {
		return licensingError(err, "user")
	}
	return created(w, "/v3/users/"+u.ID, u)
}

func (a *API) listUsers(w http.ResponseWriter, r *http.Request) error {
	p, _, err := listQuery(r)
	if err != nil {
		return err
	}
	out, next, err := a.licensing.Users(r.Context(), accountID(r), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, newList(out, next))
}

func (a *API) getUser(w http.ResponseWriter, r *http.Request) error {
	u, err := a.licensing.User(r.Context(), accountID(r), pathID(r, "id"))
	if err != nil {
		return licensingError(err, "user")
	}
	return writeJSON(w, http.StatusOK, u)
}

func (a *API) updateUser(w http.ResponseWriter, r *http.Request) error {
	id := pathID(r, "id")
	var in licensing.UserInput
	if err := decodeOn(w, r, &in, "user", func() error { _, err := a.licensing.User(r.Context(), accountID(r), id); return err }); err != nil {
		return err
	}
	u, err := a.licensing.UpdateUser(r.Context(), accountID(r), id, in)
	if err != nil {
		return licensingError(err, "user")
	}
	return writeJSON(w, http.StatusOK, u)
}

// deleteUser deletes a user; their licenses stay, unassigned.
func (a *API) deleteUser(w http.ResponseWriter, r *http.Request) error {
	if err := a.licensing.DeleteUser(r.Context(), accountID(r), pathID(r, "id")); err != nil {
		return licensingError(err, "user")
	}
	return noContent(w)
}
