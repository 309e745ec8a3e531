package client

import (
	"context"
	"time"
)

// The licensing resources. Each change of one fires its event (see
// docs/events.md); the answers are the events' data.

// Product is a product licenses are issued for.
type Product struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Metadata map[string]any `json:"metadata"`
}

// User is a licensee.
type User struct {
	ID    string  `json:"id"`
	Email string  `json:"email"`
	Name  *string `json:"name"`
}

// License is a license of a product.
type License struct {
	ID                 string         `json:"id"`
	Key                string         `json:"key"`
	ProductID          string         `json:"productId"`
	UserID             *string        `json:"userId"`
	ExpiresAt          *time.Time     `json:"expiresAt"`
	Validity           *int           `json:"validity"`
	AllowedActivations *int           `json:"allowedActivations"`
	TotalActivations   int            `json:"totalActivations"`
	Metadata           map[string]any `json:"metadata"`
}

// LicenseCreate is a new license; only ProductID is required.
type LicenseCreate struct {
	ProductID string `json:"productId"`
	UserID    string `json:"userId,omitempty"`
	Key       string `json:"key,omitempty"`
	Validity  int    `json:"validity,omitempty"` // days
	// ExpiresAt, when set, is the license's expiry (else validity seconds
	// from now, or never without a validity).
	ExpiresAt          *time.Time     `json:"expiresAt,omitempty"`
	AllowedActivations int            `json:"allowedActivations,omitempty"`
	Metadata           map[string]any `json:"metadata,omitempty"`
}

// Activation is one machine using a license.
type Activation struct {
	ID          string `json:"id"`
	LicenseID   string `json:"licenseId"`
	Fingerprint string `json:"fingerprint"`
}

// Release is a version of a product.
type Release struct {
	ID        string `json:"id"`
	ProductID string `json:"productId"`
	Version   string `json:"version"`
}

// TrialActivation is a trial of a product on one machine.
type TrialActivation struct {
	ID          string `json:"id"`
	ProductID   string `json:"productId"`
	Fingerprint string `json:"fingerprint"`
}

// CreateProduct creates a product (product.created).
func (c *Client) CreateProduct(ctx context.Context, name string, metadata map[string]any) (Product, error) {
	in := map[string]any{"name": name}
	if metadata != nil {
		in["metadata"] = metadata
	}
	var out Product
	err := c.do(ctx, "POST", "/v3/products", nil, in, &out)
	return out, err
}

// UpdateProduct renames a product (product.updated).
func (c *Client) UpdateProduct(ctx context.Context, id, name string) (Product, error) {
	var out Product
	err := c.do(ctx, "PATCH", "/v3/products/"+esc(id), nil, map[string]any{"name": name}, &out)
	return out, err
}

// DeleteProduct deletes a product with everything of it (product.deleted).
func (c *Client) DeleteProduct(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v3/products/"+esc(id), nil, nil, nil)
}

// CreateUser creates a user (user.created).
func (c *Client) CreateUser(ctx context.Context, email, name string) (User, error) {
	in := map[string]any{"email": email}
	if name != "" {
		in["name"] = name
	}
	var out User
	err := c.do(ctx, "POST", "/v3/users", nil, in, &out)
	return out, err
}

// UpdateUser renames a user (user.updated).
func (c *Client) UpdateUser(ctx context.Context, id, name string) (User, error) {
	var out User
	err := c.do(ctx, "PATCH", "/v3/users/"+esc(id), nil, map[string]any{"name": name}, &out)
	return out, err
}

// DeleteUser deletes a user (user.deleted).
func (c *Client) DeleteUser(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v3/users/"+esc(id), nil, nil, nil)
}

// CreateLicense creates a license (license.created).
func (c *Client) CreateLicense(ctx context.Context, l LicenseCreate) (License, error) {
	var out License
	err := c.do(ctx, "POST", "/v3/licenses", nil, l, &out)
	return out, err
}

// UpdateLicenseMetadata replaces a license's metadata (license.updated).
func (c *Client) UpdateLicenseMetadata(ctx context.Context, id string, metadata map[string]any) (License, error) {
	var out License
	err := c.do(ctx, "PATCH", "/v3/licenses/"+esc(id), nil, map[string]any{"metadata": metadata}, &out)
	return out, err
}

// RenewLicense extends a license by its validity (license.renewed).
func (c *Client) RenewLicense(ctx context.Context, id string) (License, error) {
	var out License
	err := c.do(ctx, "POST", "/v3/licenses/"+esc(id)+"/renew", nil, nil, &out)
	return out, err
}

// SetLicenseExpiresAt sets when a license expires
// (license.expiresAt.updated).
func (c *Client) SetLicenseExpiresAt(ctx context.Context, id string, at time.Time) (License, error) {
	var out License
	err := c.do(ctx, "PATCH", "/v3/licenses/"+esc(id)+"/expires-at", nil,
		map[string]any{"expiresAt": at.UTC().Format("2006-01-02T15:04:05.000Z")}, &out)
	return out, err
}

// DeleteLicense deletes a license (license.deleted).
func (c *Client) DeleteLicense(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v3/licenses/"+esc(id), nil, nil, nil)
}

// Activate activates a license on a machine (activation.created, and
// license.first-activated the first time ever).
func (c *Client) Activate(ctx context.Context, licenseKey, fingerprint string) (Activation, error) {
	var out Activation
	err := c.do(ctx, "POST", "/v3/activations", nil, map[string]any{"licenseKey": licenseKey, "fingerprint": fingerprint}, &out)
	return out, err
}

// DeleteActivation deactivates a machine (activation.deleted).
func (c *Client) DeleteActivation(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v3/activations/"+esc(id), nil, nil, nil)
}

// CreateRelease creates a release of a product (release.created).
func (c *Client) CreateRelease(ctx context.Context, productID, version string) (Release, error) {
	var out Release
	err := c.do(ctx, "POST", "/v3/releases", nil, map[string]any{"productId": productID, "version": version}, &out)
	return out, err
}

// DeleteRelease deletes a release (release.deleted).
func (c *Client) DeleteRelease(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v3/releases/"+esc(id), nil, nil, nil)
}

// StartTrial starts a trial of a product on a machine
// (trial-activation.created).
func (c *Client) StartTrial(ctx context.Context, productID, fingerprint string) (TrialActivation, error) {
	var out TrialActivation
	err := c.do(ctx, "POST", "/v3/trial-activations", nil, map[string]any{"productId": productID, "fingerprint": fingerprint}, &out)
	return out, err
}

// DeleteTrial ends a trial (trial-activation.deleted).
func (c *Client) DeleteTrial(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v3/trial-activations/"+esc(id), nil, nil, nil)
}
