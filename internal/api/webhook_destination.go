package api

import (
	"encoding/json"
	"fmt"

	"github.com/heraldhq/herald/internal/netguard"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// destinationInput is a webhook's type and config as read from a request:
// the type sent (a new webhook) or stored (a change), the config to store
// and the url it makes (decision 0133).
type destinationInput struct {
	stored    string          // the webhook's type before a change; "" for a new one
	oldConfig json.RawMessage // its config before a change
	typ       string          // the type it has after the request
	config    json.RawMessage // the checked config to store; nil when none was sent
	where     string          // its url, for a destination whose config was sent
}

// checkDestination checks the type and config sent, and returns the
// webhook's type for the other fields' rules. A type is chosen when a
// webhook is made, and stays.
func (in *webhookInput) checkDestination(v *Invalid, policy netguard.Policy, create bool) string {
	var errs validator.Errors
	d := &in.dest
	d.typ = d.stored
	if in.Type != nil {
		validator.CheckType(&errs, "type", *in.Type)
		switch {
		case create:
			d.typ = *in.Type
		case *in.Type != typeOr(d.stored):
			errs.Add("type", fmt.Sprintf("is %s and cannot change; make a new webhook of type %s", typeOr(d.stored), *in.Type))
		}
	}
	if len(errs) == 0 && (create || in.Config != nil) {
		if in.Config != nil && string(in.Config) == "null" && !validator.IsHTTP(d.typ) && !validator.IsPull(d.typ) {
			errs.Add("config", "is required for a "+d.typ+" destination")
		} else {
			d.config, d.where = validator.CheckConfig(&errs, policy, d.typ, in.Config, d.oldConfig)
		}
	}
	for _, e := range errs {
		v.Add(e.Field, e.Detail)
	}
	return typeOr(d.typ)
}

// url is a new webhook's url: the one sent for http, a destination's
// address otherwise.
func (in *webhookInput) url() string {
	if !validator.IsHTTP(in.dest.typ) {
		return in.dest.where
	}
	return *in.URL
}

// patchDestination sets a change's config and the url it makes.
func (in *webhookInput) patchDestination(p *store.WebhookPatch) {
	if in.dest.config == nil || validator.IsHTTP(in.dest.typ) {
		return
	}
	p.Config, p.URL = &in.dest.config, &in.dest.where
}

// typeOr names a type, "" as http.
func typeOr(typ string) string {
	if typ == "" {
		return store.TypeHTTP
	}
	return typ
}
