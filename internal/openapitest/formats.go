package openapitest

import (
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

var (
	anyUUID      = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	lowerUUID    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	heraldMillis = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
)

// requestFormats are lenient where the API is: any UUID casing, any RFC
// 3339 time.
var requestFormats = []openapi3.SchemaValidationOption{
	openapi3.WithStringFormatValidators(map[string]openapi3.StringFormatValidator{
		"uuid":      openapi3.NewCallbackValidator(uuidMatching(anyUUID)),
		"date-time": openapi3.NewCallbackValidator(rfc3339),
		"email":     openapi3.NewCallbackValidator(bareEmail),
		"uri":       openapi3.NewCallbackValidator(httpURL),
	}),
}

// responseFormats hold answers to how herald writes values: lowercase
// UUIDs, UTC times with milliseconds.
var responseFormats = []openapi3.SchemaValidationOption{
	openapi3.WithStringFormatValidators(map[string]openapi3.StringFormatValidator{
		"uuid":      openapi3.NewCallbackValidator(uuidMatching(lowerUUID)),
		"date-time": openapi3.NewCallbackValidator(heraldTime),
		"email":     openapi3.NewCallbackValidator(bareEmail),
		"uri":       openapi3.NewCallbackValidator(httpURL),
	}),
}

func uuidMatching(re *regexp.Regexp) func(string) error {
	return func(s string) error {
		if !re.MatchString(s) {
			return fmt.Errorf("not a UUID matching %s", re)
		}
		return nil
	}
}

func rfc3339(s string) error {
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return fmt.Errorf("not an RFC 3339 time: %w", err)
	}
	return nil
}

func heraldTime(s string) error {
	if !heraldMillis.MatchString(s) {
		return errors.New("not an RFC 3339 UTC time with exactly three fractional digits and Z, like 2026-11-21T08:07:13.120Z")
	}
	return rfc3339(s)
}

func bareEmail(s string) error {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return fmt.Errorf("not an email address: %w", err)
	}
	if a.Name != "" || a.Address != s {
		return errors.New("not a bare email address (no display name, no angle brackets)")
	}
	return nil
}

func httpURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http or https URL")
	}
	return nil
}
