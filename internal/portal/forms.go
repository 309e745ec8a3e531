package portal

import (
	"strings"

	"github.com/heraldhq/herald/internal/validator"
)

// fieldErrors maps a form field's name to what is wrong with it, shown next
// to the field; the key "" holds an error about the whole form.
type fieldErrors map[string]string

// add records the first error of a field.
func (e *fieldErrors) add(field, msg string) {
	if *e == nil {
		*e = fieldErrors{}
	}
	if _, ok := (*e)[field]; !ok {
		(*e)[field] = msg
	}
}

// fieldLabels names fields in messages as their labels do on the page.
var fieldLabels = map[string]string{
	"name": "Name", "url": "URL", "events": "Events", "token": "Token", "filter": "Filter", "headers": "Headers", "signatureScheme": "Signature scheme",
	"notificationEmail": "Notification email", "expiringSoonLeadHours": "Expiring-soon lead time",
	"scope": "Scope", "expires": "Expires",
	"password": "Password", "email": "Email address", "role": "Role",
	"payload": "Payload", "tls.clientCertificate": "Client certificate", "tls.clientKey": "Private key", "tls.caCertificate": "CA certificate",
	"oauth2.tokenUrl": "Token URL", "oauth2.clientId": "Client ID", "oauth2.clientSecret": "Client secret", "oauth2.scopes": "Scopes",
}

// fromValidator turns the shared rules' errors into sentences beside fields;
// an error about one element of a list ("events[2]") goes to the list.
func fromValidator(errs validator.Errors) fieldErrors {
	var out fieldErrors
	for _, e := range errs {
		field, _, _ := strings.Cut(e.Field, "[")
		label := fieldLabels[field]
		if label == "" {
			label = field
		}
		out.add(field, label+" "+e.Detail+".")
	}
	return out
}
