package api

import (
	"net/http"
	"strings"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/event"
)

// EventType is one event kind as GET /v3/event-types lists it: what fires
// it and where its payload's schema is.
type EventType struct {
	Kind event.Kind `json:"kind"`
	// Group is specification, licensing or operational (kinds.yaml).
	Group       event.Group `json:"group"`
	Description string      `json:"description"` // what fires it
	// Resource is the reference's schema of the payload's data, e.g.
	// "License".
	Resource string `json:"resource"`
	Schema   string `json:"schema"` // the path of its JSON Schema
}

// listEventTypes answers every event kind, in the catalog's order, from
// their declarations (internal/event/kinds.yaml): a client learns the kinds
// it may subscribe to without reading the reference. Like the schemas, it
// needs no token.
func (a *API) listEventTypes(w http.ResponseWriter, r *http.Request) error {
	decls := event.Declarations()
	out := make([]EventType, len(decls))
	for i, d := range decls {
		out[i] = EventType{Kind: d.Kind, Group: d.Group, Description: d.Fires, Resource: d.Resource,
			Schema: "/v3/event-types/" + string(d.Kind) + "/schema"}
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	return writeJSON(w, http.StatusOK, map[string]any{"data": out})
}

// getEventTypeSchema answers the JSON Schema (2020-12) of one event kind's
// delivery payload. Like the reference it comes from, it needs no token:
// receivers' build tools fetch it to generate types.
func (a *API) getEventTypeSchema(w http.ResponseWriter, r *http.Request) error {
	kind := r.PathValue("kind")
	b, ok := catalog.Schema(event.Kind(kind))
	if !ok {
		kinds := make([]string, len(event.Kinds))
		for i, k := range event.Kinds {
			kinds[i] = string(k)
		}
		return problem(http.StatusNotFound, "not-found", "Not found",
			"no event kind "+kind+"; the kinds are "+strings.Join(kinds, ", ")+" (GET /v3/event-types lists them)")
	}
	w.Header().Set("Content-Type", "application/schema+json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(b)
	return nil
}
