package client

import "time"

// WebhookTLS is a webhook's client certificate as the API shows it: the
// key masked ("********"), with the certificate's subject and expiry.
type WebhookTLS struct {
	ClientCertificate string `json:"clientCertificate"`
	ClientKey         string `json:"clientKey"`
	// CACertificate verifies the receiver; nil for the system's roots.
	CACertificate *string   `json:"caCertificate"`
	Subject       string    `json:"subject"`
	ExpiresAt     time.Time `json:"expiresAt"`
}

// ClientCertificate is a client certificate and its key, PEM, to present
// to a receiver that asks for mutual TLS, and the CA (PEM, "" for the
// system's roots) that verifies the receiver.
type ClientCertificate struct {
	ClientCertificate string `json:"clientCertificate"`
	ClientKey         string `json:"clientKey"`
	CACertificate     string `json:"caCertificate,omitempty"`
}

// OAuth2Client is an OAuth2 client for the client credentials grant:
// herald fetches a token from TokenURL and sends it as a bearer token.
type OAuth2Client struct {
	TokenURL     string   `json:"tokenUrl"`
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"`
	Scopes       []string `json:"scopes,omitempty"`
}
