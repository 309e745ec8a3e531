package api

import (
	"net/http"

	"github.com/heraldhq/herald/internal/licensing"
)

func (a *API) createRelease(w http.ResponseWriter, r *http.Request) error {
	var in licensing.ReleaseInput
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	rel, err := a.licensing.CreateRelease(r.Context(), accountID(r), in)
	if err != nil {
		return licensingError(err, "release")
	}
	return created(w, "/v3/releases/"+rel.ID, rel)
}

func (a *API) listReleases(w http.ResponseWriter, r *http.Request) error {
	p, ids, err := listQuery(r, "productId")
	if err != nil {
		return err
	}
	out, next, err := a.licensing.Releases(r.Context(), accountID(r), licensing.ReleaseFilter{ProductID: ids["productId"], Page: p})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, newList(out, next))
}

func (a *API) getRelease(w http.ResponseWriter, r *http.Request) error {
	rel, err := a.licensing.Release(r.Context(), accountID(r), pathID(r, "id"))
	if err != nil {
		return licensingError(err, "release")
	}
	return writeJSON(w, http.StatusOK, rel)
}

// deleteRelease fires release.deleted; the files go silently.
func (a *API) deleteRelease(w http.ResponseWriter, r *http.Request) error {
	if err := a.licensing.DeleteRelease(r.Context(), accountID(r), pathID(r, "id")); err != nil {
		return licensingError(err, "release")
	}
	return noContent(w)
}

// createReleaseFile fires nothing.
func (a *API) createReleaseFile(w http.ResponseWriter, r *http.Request) error {
	id := pathID(r, "id")
	var in licensing.ReleaseFileInput
	if err := decodeOn(w, r, &in, "release", func() error { _, err := a.licensing.Release(r.Context(), accountID(r), id); return err }); err != nil {
		return err
	}
	f, err := a.licensing.CreateReleaseFile(r.Context(), accountID(r), id, in)
	if err != nil {
		return licensingError(err, "release")
	}
	// No Location: a file is read as part of its release.
	return writeJSON(w, http.StatusCreated, f)
}

// deleteReleaseFile fires nothing.
func (a *API) deleteReleaseFile(w http.ResponseWriter, r *http.Request) error {
	if err := a.licensing.DeleteReleaseFile(r.Context(), accountID(r), pathID(r, "id"), pathID(r, "fileId")); err != nil {
		return licensingError(err, "release file")
	}
	return noContent(w)
}
