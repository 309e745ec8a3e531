package attempt

// Reach is how a webhook's requests reach its receiver beyond its URL and
// signature: the body's form, a client certificate for mutual TLS, and an
// OAuth2 client whose token each request carries. The zero Reach sends the
// full body over a plain client.
type Reach struct {
	// Thin sends the event's id, kind, time and the API path of its
	// object instead of the object.
	Thin   bool
	TLS    *TLS    // nil: no client certificate, the system's roots
	OAuth2 *OAuth2 // nil: no bearer token
}

// TLS is a webhook's client certificate and key, and the CA that verifies
// its receiver, all PEM. CACertificate "" verifies with the system's roots.
type TLS struct {
	ClientCertificate, ClientKey, CACertificate string
}

// OAuth2 is a webhook's OAuth2 client: the client credentials grant at
// TokenURL, for Scopes (none: the token endpoint's default).
type OAuth2 struct {
	TokenURL     string   `json:"tokenUrl"`
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"`
	Scopes       []string `json:"scopes,omitempty"`
}
