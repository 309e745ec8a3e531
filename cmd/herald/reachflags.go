package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/heraldhq/herald/client"
)

// reachFlags are how a webhook's requests reach its receiver, as flags of
// webhooks create and update: the body's form, a client certificate for
// mutual TLS (PEM files) and an OAuth2 client.
type reachFlags struct {
	fs                                  *flag.FlagSet
	command                             string
	payload                             *string
	cert, key, ca                       *string
	tokenURL, clientID, secret, scopes  *string
	noTLS, noOAuth2                     *bool // update only
	tls                                 *client.ClientCertificate
	oauth2                              *client.OAuth2Client
	certSet, keySet, oauthSet, scopeSet bool
}

func addReachFlags(fs *flag.FlagSet, command string, update bool) *reachFlags {
	r := &reachFlags{fs: fs, command: command}
	r.payload = fs.String("payload", "", "what a delivery's body carries: full (the default), the event's object; or thin, its id and the API path to read it")
	r.cert = fs.String("client-cert", "", "a PEM file: the client certificate presented to a receiver that asks for mutual TLS (with --client-key)")
	r.key = fs.String("client-key", "", "a PEM file: the client certificate's private key (kept encrypted, never shown again)")
	r.ca = fs.String("client-ca", "", "a PEM file: the CA that verifies the receiver's certificate (default: the system's roots)")
	r.tokenURL = fs.String("oauth2-token-url", "", "an OAuth2 token endpoint: each delivery carries a bearer token fetched there (client credentials grant)")
	r.clientID = fs.String("oauth2-client-id", "", "the OAuth2 client id")
	r.secret = fs.String("oauth2-client-secret", "", "the OAuth2 client secret, or @FILE to read it from a file (kept encrypted, never shown again)")
	r.scopes = fs.String("oauth2-scopes", "", "comma-separated OAuth2 scopes to ask for (default: the endpoint's)")
	if update {
		r.noTLS = fs.Bool("no-client-cert", false, "remove the client certificate")
		r.noOAuth2 = fs.Bool("no-oauth2", false, "remove the OAuth2 client")
	}
	return r
}

// read checks the flags and reads the files they name, before any call.
func (r *reachFlags) read(update bool) error {
	set := map[string]bool{}
	r.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["payload"] && *r.payload != "full" && *r.payload != "thin" {
		return usageError{r.command, fmt.Errorf("--payload %q: want full or thin", *r.payload)}
	}
	r.certSet, r.keySet = set["client-cert"], set["client-key"]
	r.oauthSet = set["oauth2-token-url"] || set["oauth2-client-id"] || set["oauth2-client-secret"] || set["oauth2-scopes"]
	r.scopeSet = set["oauth2-scopes"]
	switch {
	case r.noTLS != nil && *r.noTLS && (r.certSet || r.keySet || set["client-ca"]):
		return usageError{r.command, errors.New("--no-client-cert removes the certificate: pass it without --client-cert, --client-key or --client-ca")}
	case r.noOAuth2 != nil && *r.noOAuth2 && r.oauthSet:
		return usageError{r.command, errors.New("--no-oauth2 removes the OAuth2 client: pass it without the --oauth2-… flags")}
	case !update && (r.certSet || r.keySet || set["client-ca"]) && !(r.certSet && r.keySet):
		return usageError{r.command, errors.New("--client-cert and --client-key go together")}
	case !update && r.oauthSet:
		if err := required(r.command, "oauth2-token-url", *r.tokenURL, "oauth2-client-id", *r.clientID, "oauth2-client-secret", *r.secret); err != nil {
			return err
		}
	}
	if r.certSet || r.keySet || set["client-ca"] {
		r.tls = &client.ClientCertificate{}
		for _, f := range []struct {
			name, path string
			to         *string
		}{{"client-cert", *r.cert, &r.tls.ClientCertificate}, {"client-key", *r.key, &r.tls.ClientKey}, {"client-ca", *r.ca, &r.tls.CACertificate}} {
			if f.path == "" {
				continue
			}
			b, err := os.ReadFile(f.path)
			if err != nil {
				return usageError{r.command, fmt.Errorf("--%s: cannot read %s: %w", f.name, f.path, errors.Unwrap(err))}
			}
			*f.to = string(b)
		}
	}
	if r.oauthSet {
		secret := *r.secret
		if file, ok := strings.CutPrefix(secret, "@"); ok {
			b, err := os.ReadFile(file)
			if err != nil {
				return usageError{r.command, fmt.Errorf("--oauth2-client-secret: cannot read %s: %w", file, errors.Unwrap(err))}
			}
			secret = strings.TrimSpace(string(b))
		}
		r.oauth2 = &client.OAuth2Client{TokenURL: *r.tokenURL, ClientID: *r.clientID, ClientSecret: secret, Scopes: splitList(*r.scopes)}
	}
	return nil
}

// merged completes an update's certificate and OAuth2 client from the
// webhook's (PATCH replaces each whole): a key or secret not given keeps
// the stored one.
func (r *reachFlags) merged(w client.Webhook) {
	if r.tls != nil && w.TLS != nil {
		if !r.certSet {
			r.tls.ClientCertificate = w.TLS.ClientCertificate
		}
		if r.tls.CACertificate == "" && w.TLS.CACertificate != nil {
			r.tls.CACertificate = *w.TLS.CACertificate
		}
	}
	if r.tls != nil && !r.keySet {
		r.tls.ClientKey = "********"
	}
	if r.oauth2 != nil && w.OAuth2 != nil {
		o := r.oauth2
		o.TokenURL, o.ClientID = cmpOr(o.TokenURL, w.OAuth2.TokenURL), cmpOr(o.ClientID, w.OAuth2.ClientID)
		if !r.scopeSet {
			o.Scopes = w.OAuth2.Scopes
		}
	}
	if r.oauth2 != nil && r.oauth2.ClientSecret == "" {
		r.oauth2.ClientSecret = "********"
	}
}

// changes reports whether an update's flags change anything.
func (r *reachFlags) changes() bool {
	return r.tls != nil || r.oauth2 != nil || *r.payload != "" || (r.noTLS != nil && *r.noTLS) || (r.noOAuth2 != nil && *r.noOAuth2)
}

// setCreate puts the flags in a create.
func (r *reachFlags) setCreate(in *client.WebhookCreate) {
	in.Payload, in.TLS, in.OAuth2 = *r.payload, r.tls, r.oauth2
}

// setUpdate puts the flags in an update.
func (r *reachFlags) setUpdate(in *client.WebhookUpdate) {
	if *r.payload != "" {
		in.Payload = r.payload
	}
	in.TLS, in.OAuth2 = r.tls, r.oauth2
	if *r.noTLS {
		in.TLS = &client.ClientCertificate{}
	}
	if *r.noOAuth2 {
		in.OAuth2 = &client.OAuth2Client{}
	}
}

// reachRows are the show table's rows of a webhook's reach.
func reachRows(w client.Webhook) [][2]string {
	rows := [][2]string{{"Payload", cmpOr(w.Payload, "full")}}
	cert, oauth := "none", "none"
	if t := w.TLS; t != nil {
		cert = fmt.Sprintf("%s, expires %s", t.Subject, t.ExpiresAt.Format(time.RFC3339))
	}
	if o := w.OAuth2; o != nil {
		oauth = fmt.Sprintf("%s as %s", o.TokenURL, o.ClientID)
		if len(o.Scopes) > 0 {
			oauth += ", scopes " + strings.Join(o.Scopes, " ")
		}
	}
	return append(rows, [2]string{"Client certificate", cert}, [2]string{"OAuth2", oauth})
}
