package validator

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/netguard"
	"github.com/heraldhq/herald/internal/store"
)

// The rules for how a webhook's requests reach its receiver: the body's
// form, a client certificate for mutual TLS, and an OAuth2 client. A key
// or a secret is never shown again once saved: sent back as
// MaskedHeaderValue, it keeps the one stored.

// PayloadRule says what a webhook's payload may be.
var PayloadRule = fmt.Sprintf("must be %q or %q", store.PayloadFull, store.PayloadThin)

// CheckPayload checks a webhook's payload form.
func CheckPayload(v *Errors, field, payload string) {
	if payload != store.PayloadFull && payload != store.PayloadThin {
		v.Add(field, fmt.Sprintf("%q: %s", payload, PayloadRule))
	}
}

// CheckReachOfType refuses a client certificate (tls) or an OAuth2 client
// (oauth2) on a webhook of a type other than http: they are an HTTP
// receiver's, and a destination's broker takes its TLS and credentials in
// its config. tlsField and oauth2Field name them where the caller shows
// errors (the API's objects, the portal's first field of each).
func CheckReachOfType(add func(field, detail string), typ string, tls, oauth2 bool, tlsField, oauth2Field string) {
	if IsHTTP(typ) {
		return
	}
	rule := "applies to http webhooks only; a " + typ + " destination's TLS and credentials are in config"
	if tls {
		add(tlsField, rule)
	}
	if oauth2 {
		add(oauth2Field, rule)
	}
}

// Bounds of what a webhook's client certificate and OAuth2 client hold.
const (
	MaxPEMBytes  = 32 << 10 // a certificate chain, a key or a CA bundle
	MaxScopes    = 20
	MaxScopeLen  = 200
	MaxClientLen = 512 // a client id or secret
)

// CheckTLS checks a webhook's client certificate: PEM certificate(s) and a
// key that matches the first, not yet expired at now, and the CA, when
// given, PEM certificates. A key of MaskedHeaderValue takes old's (the
// stored one); refused when there is none. Fills in the subject and
// expiry.
func CheckTLS(v *Errors, field string, t *store.WebhookTLS, old *store.WebhookTLS, now time.Time) {
	t.ClientCertificate, t.CACertificate = strings.TrimSpace(t.ClientCertificate), strings.TrimSpace(t.CACertificate)
	if t.ClientKey == MaskedHeaderValue {
		if old == nil {
			v.Add(field+".clientKey", "is masked, and no key is stored to keep: send the key's PEM")
			return
		}
		t.ClientKey = old.ClientKey
	}
	t.ClientKey = strings.TrimSpace(t.ClientKey)
	certOK := true
	switch {
	case t.ClientCertificate == "":
		v.Add(field+".clientCertificate", "is required: the client certificate, PEM")
		certOK = false
	case len(t.ClientCertificate) > MaxPEMBytes:
		v.Add(field+".clientCertificate", fmt.Sprintf("must be at most %d bytes", MaxPEMBytes))
		certOK = false
	default:
		subject, notAfter, err := store.CertificateInfo(t.ClientCertificate)
		switch {
		case err != nil:
			v.Add(field+".clientCertificate", "is not a PEM certificate: "+err.Error())
			certOK = false
		case !notAfter.After(now):
			v.Add(field+".clientCertificate", "expired at "+notAfter.Format(time.RFC3339))
		}
		t.Subject, t.NotAfter = subject, notAfter
	}
	switch {
	case t.ClientKey == "":
		v.Add(field+".clientKey", "is required: the client certificate's private key, PEM")
	case len(t.ClientKey) > MaxPEMBytes:
		v.Add(field+".clientKey", fmt.Sprintf("must be at most %d bytes", MaxPEMBytes))
	case certOK:
		if _, err := tls.X509KeyPair([]byte(t.ClientCertificate), []byte(t.ClientKey)); err != nil {
			v.Add(field+".clientKey", "key does not match certificate, or is not a PEM private key")
		}
	}
	if t.CACertificate != "" {
		switch {
		case len(t.CACertificate) > MaxPEMBytes:
			v.Add(field+".caCertificate", fmt.Sprintf("must be at most %d bytes", MaxPEMBytes))
		case !x509.NewCertPool().AppendCertsFromPEM([]byte(t.CACertificate)):
			v.Add(field+".caCertificate", "holds no PEM certificate")
		}
	}
}

// CheckOAuth2 checks a webhook's OAuth2 client: a token URL the outbound
// policy allows (as a webhook's URL), a client id, a secret (of
// MaskedHeaderValue: old's, refused when there is none) and scopes, each a
// single word.
func CheckOAuth2(v *Errors, policy netguard.Policy, field string, o *store.WebhookOAuth2, old *store.WebhookOAuth2) {
	o.TokenURL, o.ClientID = strings.TrimSpace(o.TokenURL), strings.TrimSpace(o.ClientID)
	switch {
	case o.TokenURL == "":
		v.Add(field+".tokenUrl", "is required")
	case CheckText(v, field+".tokenUrl", o.TokenURL):
		if err := policy.ValidateURL(o.TokenURL); err != nil {
			v.Add(field+".tokenUrl", err.Error())
		}
	}
	switch {
	case o.ClientID == "":
		v.Add(field+".clientId", "is required")
	case len(o.ClientID) > MaxClientLen:
		v.Add(field+".clientId", fmt.Sprintf("must be at most %d bytes", MaxClientLen))
	default:
		CheckText(v, field+".clientId", o.ClientID)
	}
	if o.ClientSecret == MaskedHeaderValue {
		if old == nil {
			v.Add(field+".clientSecret", "is masked, and no secret is stored to keep: send the secret")
		} else {
			o.ClientSecret = old.ClientSecret
		}
	}
	switch {
	case o.ClientSecret == "":
		v.Add(field+".clientSecret", "is required")
	case len(o.ClientSecret) > MaxClientLen:
		v.Add(field+".clientSecret", fmt.Sprintf("must be at most %d bytes", MaxClientLen))
	default:
		CheckText(v, field+".clientSecret", o.ClientSecret)
	}
	if len(o.Scopes) > MaxScopes {
		v.Add(field+".scopes", fmt.Sprintf("must hold at most %d scopes", MaxScopes))
		return
	}
	for i, s := range o.Scopes {
		f := fmt.Sprintf("%s.scopes[%d]", field, i)
		switch {
		case s == "" || len(s) > MaxScopeLen:
			v.Add(f, fmt.Sprintf("must be 1 to %d characters", MaxScopeLen))
		case strings.ContainsAny(s, " \t\r\n\"\\"):
			v.Add(f, "must be one scope: no spaces, quotes or backslashes")
		}
	}
}
