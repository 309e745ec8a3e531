// Package pubsub owns the pubsub destination (Google Cloud Pub/Sub): its
// config (a project, a topic, a service account's key, or an emulator's
// address), and publishing each attempt with the license as its ordering
// key, confirmed by the message id Pub/Sub returns.
package pubsub

import (
	"encoding/json"
	"net/url"

	"github.com/heraldhq/herald/internal/destination"
)

// Type is the pubsub destination type.
type Type struct{}

// New returns the pubsub type.
func New() destination.Type { return Type{} }

// Name implements destination.Type.
func (Type) Name() string { return destination.PubSub }

// Fields implements destination.Type.
func (Type) Fields() []destination.Field {
	return []destination.Field{
		{Path: "projectId", Label: "Project id", Kind: destination.Text, Required: true},
		{Path: "topic", Label: "Topic", Kind: destination.Text, Required: true, Hint: "The topic's id within the project"},
		{Path: "credentialsJson", Label: "Service account key (JSON)", Kind: destination.Secret, Multiline: true,
			Hint: "A service account's JSON key allowed to publish to the topic; kept encrypted and never shown again"},
		{Path: "endpoint", Label: "Endpoint", Kind: destination.Text, Address: destination.HostPort,
			Hint: "host:port of a Pub/Sub emulator, reached without TLS or credentials; empty for Google's"},
	}
}

// Check implements destination.Type.
func (Type) Check(c destination.Config, add func(path, detail string)) {
	creds := c.String("credentialsJson")
	if creds != "" {
		var key map[string]any
		if json.Unmarshal([]byte(creds), &key) != nil {
			add("credentialsJson", "must be a service account's JSON key")
		}
	}
	if creds == "" && c.String("endpoint") == "" {
		add("credentialsJson", "is required unless an emulator's endpoint is given")
	}
}

// Where implements destination.Type.
func (Type) Where(c destination.Config) string {
	return "pubsub://" + url.PathEscape(c.String("projectId")) + "/" + url.PathEscape(c.String("topic"))
}
