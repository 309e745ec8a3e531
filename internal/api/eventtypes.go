package api

import (
	"net/http"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/event"
)

// getEventTypeSchema answers the JSON Schema (2020-12) of one event kind's
// delivery payload. Like the reference it comes from, it needs no token:
// receivers' build tools fetch it to generate types.
func (a *API) getEventTypeSchema(w http.ResponseWriter, r *http.Request) error {
	kind := r.PathValue("kind")
	b, ok := catalog.Schema(event.Kind(kind))
	if !ok {
		return problem(http.StatusNotFound, "not-found", "Not found",
			"no event kind "+kind+"; the kinds are the API reference's EventKind")
	}
	w.Header().Set("Content-Type", "application/schema+json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(b)
	return nil
}
