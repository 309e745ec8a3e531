package portal

import (
	"net/url"
	"strings"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// reachForm is the webhook form's payload, client certificate and OAuth2
// client, as typed; a stored key or secret shows masked, and a masked one
// keeps it. The field names are the API's (tls.clientKey, oauth2.tokenUrl),
// so that an error lands beside its field.
type reachForm struct {
	Payload                       string
	TLSCert, TLSKey, TLSCA        string
	TokenURL, ClientID, Secret    string
	Scopes                        string // space-separated
	HasStoredKey, HasStoredSecret bool
}

// The form's secret fields, which a refused form's flash does not keep
// unless masked: the person pastes them again.
var reachSecretFields = []string{"tls.clientKey", "oauth2.clientSecret"}

func reachFormFrom(v url.Values) reachForm {
	return reachForm{Payload: v.Get("payload"), TLSCert: v.Get("tls.clientCertificate"), TLSKey: v.Get("tls.clientKey"), TLSCA: v.Get("tls.caCertificate"),
		TokenURL: v.Get("oauth2.tokenUrl"), ClientID: v.Get("oauth2.clientId"), Secret: v.Get("oauth2.clientSecret"), Scopes: v.Get("oauth2.scopes")}
}

// reachFormOf shows a webhook's reach in its form.
func reachFormOf(r store.WebhookReach) reachForm {
	f := reachForm{Payload: r.Payload}
	if t := r.TLS; t != nil {
		f.TLSCert, f.TLSKey, f.TLSCA, f.HasStoredKey = t.ClientCertificate, validator.MaskedHeaderValue, t.CACertificate, true
	}
	if o := r.OAuth2; o != nil {
		f.TokenURL, f.ClientID, f.Secret, f.Scopes, f.HasStoredSecret = o.TokenURL, o.ClientID, validator.MaskedHeaderValue, strings.Join(o.Scopes, " "), true
	}
	return f
}

// withoutSecrets is a refused form's values without a key or secret typed
// in (a masked one stays: it names the stored one).
func withoutSecrets(v url.Values) url.Values {
	for _, name := range reachSecretFields {
		if v.Get(name) != validator.MaskedHeaderValue {
			v.Del(name)
		}
	}
	return v
}

// checkReach applies the API's rules: an empty certificate is none, and
// an OAuth2 client with nothing typed is none; a destination (typ) takes
// neither. old is the stored reach.
func (h *handler) checkReach(errs *validator.Errors, f *reachForm, typ string, old store.WebhookReach) store.WebhookReach {
	r := store.WebhookReach{Payload: strings.TrimSpace(f.Payload)}
	if r.Payload == "" {
		r.Payload = store.PayloadFull
	}
	validator.CheckPayload(errs, "payload", r.Payload)
	if strings.TrimSpace(f.TLSCert) != "" || strings.TrimSpace(f.TLSKey) != "" && f.TLSKey != validator.MaskedHeaderValue {
		r.TLS = &store.WebhookTLS{ClientCertificate: f.TLSCert, ClientKey: f.TLSKey, CACertificate: f.TLSCA}
	}
	if strings.TrimSpace(f.TokenURL+f.ClientID+f.Scopes) != "" || (f.Secret != "" && f.Secret != validator.MaskedHeaderValue) {
		r.OAuth2 = &store.WebhookOAuth2{TokenURL: f.TokenURL, ClientID: f.ClientID, ClientSecret: f.Secret, Scopes: strings.Fields(f.Scopes)}
	}
	if !validator.IsHTTP(typ) {
		// A browser without the form's script shows these fields for any
		// type: what a destination cannot take is said before its contents.
		validator.CheckReachOfType(errs.Add, typ, r.TLS != nil, r.OAuth2 != nil, "tls.clientCertificate", "oauth2.tokenUrl")
		return r
	}
	if r.TLS != nil {
		validator.CheckTLS(errs, "tls", r.TLS, old.TLS, h.now())
	}
	if r.OAuth2 != nil {
		validator.CheckOAuth2(errs, h.policy, "oauth2", r.OAuth2, old.OAuth2)
	}
	return r
}

// reachPatch sets all of r, removing what it lacks.
func reachPatch(r store.WebhookReach) store.ReachPatch {
	return store.ReachPatch{Payload: &r.Payload, TLS: &r.TLS, OAuth2: &r.OAuth2}
}

// mergeErrors adds b's errors to a's, a field's first kept.
func mergeErrors(a, b fieldErrors) fieldErrors {
	for field, msg := range b {
		a.add(field, msg)
	}
	return a
}
