package api

import (
	"bytes"
	"encoding/json"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// A webhook's reach in the API: payload, tls and oauth2 (decisions 0137 to
// 0139). The client key and the client secret are never shown again once
// saved: answers carry them masked, and a masked value sent back keeps the
// stored one.

// reachJSON is what answers show of a webhook's reach.
type reachJSON struct {
	Payload string      `json:"payload"`
	TLS     *tlsJSON    `json:"tls"`    // null: no client certificate
	OAuth2  *oauth2JSON `json:"oauth2"` // null: no OAuth2 client
}

type tlsJSON struct {
	ClientCertificate string  `json:"clientCertificate"`
	ClientKey         string  `json:"clientKey"`     // masked
	CACertificate     *string `json:"caCertificate"` // null: the system's roots
	// Subject and ExpiresAt are the client certificate's.
	Subject   string `json:"subject"`
	ExpiresAt string `json:"expiresAt"`
}

type oauth2JSON struct {
	TokenURL     string   `json:"tokenUrl"`
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"` // masked
	Scopes       []string `json:"scopes"`
}

func toReachJSON(r store.WebhookReach) reachJSON {
	out := reachJSON{Payload: r.Payload}
	if out.Payload == "" {
		out.Payload = store.PayloadFull
	}
	if t := r.TLS; t != nil {
		out.TLS = &tlsJSON{ClientCertificate: t.ClientCertificate, ClientKey: validator.MaskedHeaderValue,
			Subject: t.Subject, ExpiresAt: ts(t.NotAfter)}
		if t.CACertificate != "" {
			ca := t.CACertificate
			out.TLS.CACertificate = &ca
		}
	}
	if o := r.OAuth2; o != nil {
		out.OAuth2 = &oauth2JSON{TokenURL: o.TokenURL, ClientID: o.ClientID, ClientSecret: validator.MaskedHeaderValue, Scopes: o.Scopes}
		if out.OAuth2.Scopes == nil {
			out.OAuth2.Scopes = []string{}
		}
	}
	return out
}

// reachInput is what a create or update sends of a webhook's reach; tls
// and oauth2 are read here, so that a wrong shape is a 422 naming the
// field, and null removes them.
type reachInput struct {
	Payload *string         `json:"payload"`
	TLS     json.RawMessage `json:"tls"`
	OAuth2  json.RawMessage `json:"oauth2"`

	reach store.ReachPatch // once read and checked
}

func (in *reachInput) sent() bool { return in.Payload != nil || in.TLS != nil || in.OAuth2 != nil }

// needsStored reports whether checking needs the webhook's stored reach
// (a masked key or secret keeps the stored one).
func (in *reachInput) needsStored() bool { return in.TLS != nil || in.OAuth2 != nil }

// checkReach reads and checks the reach sent; old is the stored one (zero
// for a new webhook).
func (a *API) checkReach(v *Invalid, in *reachInput, old store.WebhookReach) {
	var errs validator.Errors
	if in.Payload != nil {
		validator.CheckPayload(&errs, "payload", *in.Payload)
		in.reach.Payload = in.Payload
	}
	if in.TLS != nil {
		var t *store.WebhookTLS
		if string(in.TLS) != "null" {
			var raw struct {
				ClientCertificate string  `json:"clientCertificate"`
				ClientKey         string  `json:"clientKey"`
				CACertificate     *string `json:"caCertificate"`
			}
			if err := strictUnmarshal(in.TLS, &raw); err != nil {
				errs.Add("tls", "must be an object of clientCertificate, clientKey and caCertificate (PEM strings)")
			} else {
				t = &store.WebhookTLS{ClientCertificate: raw.ClientCertificate, ClientKey: raw.ClientKey}
				if raw.CACertificate != nil {
					t.CACertificate = *raw.CACertificate
				}
				validator.CheckTLS(&errs, "tls", t, old.TLS, a.store.Now())
			}
		}
		in.reach.TLS = &t
	}
	if in.OAuth2 != nil {
		var o *store.WebhookOAuth2
		if string(in.OAuth2) != "null" {
			o = &store.WebhookOAuth2{}
			if err := strictUnmarshal(in.OAuth2, o); err != nil {
				errs.Add("oauth2", "must be an object of tokenUrl, clientId, clientSecret (strings) and scopes (a list of strings)")
			} else {
				validator.CheckOAuth2(&errs, a.policy, "oauth2", o, old.OAuth2)
			}
		}
		in.reach.OAuth2 = &o
	}
	for _, e := range errs {
		v.Add(e.Field, e.Detail)
	}
}

// strictUnmarshal decodes one JSON object into v, refusing fields v does
// not name.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
