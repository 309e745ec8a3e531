package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"

	"github.com/heraldhq/herald/internal/store"
)

// setAccountLimits serves PATCH /v3/operator/accounts/{id}: the operator
// sets an account's limits. A limit left out stays as it is; null puts it
// back to the server-wide default. Any invalid limit answers 422 naming it,
// and nothing changes.
func (a *API) setAccountLimits(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Limits *struct {
			Webhooks             json.RawMessage `json:"webhooks"`
			APIRequestsPerSecond json.RawMessage `json:"apiRequestsPerSecond"`
		} `json:"limits"`
	}
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	if in.Limits == nil {
		return Invalid{{"limits", "is required: an object with webhooks and/or apiRequestsPerSecond"}}.Err()
	}
	var v Invalid
	var p store.LimitsPatch
	p.Webhooks = parseLimit(&v, "limits.webhooks", in.Limits.Webhooks)
	p.APIRequestsPerSecond = parseLimit(&v, "limits.apiRequestsPerSecond", in.Limits.APIRequestsPerSecond)
	if err := v.Err(); err != nil {
		return err
	}
	acct, err := a.store.SetAccountLimits(r.Context(), pathID(r, "id"), p)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("account")
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toAccountJSON(acct))
}

var wholeNumber = regexp.MustCompile(`^[0-9]+$`)

// parseLimit reads one limit: left out (nil, no change), null (back to the
// default) or a whole number from 1 to store.MaxAccountLimit.
func parseLimit(v *Invalid, field string, raw json.RawMessage) *store.LimitChange {
	if raw == nil {
		return nil
	}
	if bytes.Equal(raw, []byte("null")) {
		return &store.LimitChange{}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if !wholeNumber.Match(raw) || err != nil || n < 1 || n > store.MaxAccountLimit {
		v.Add(field, "must be a whole number from 1 to "+strconv.Itoa(store.MaxAccountLimit)+", or null for the server's default")
		return nil
	}
	return &store.LimitChange{Value: &n}
}
