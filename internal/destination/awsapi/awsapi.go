// Package awsapi owns what the AWS destination types (sqs, eventbridge)
// share in reaching an AWS API: the SDK's client options from a config's
// region, access key and endpoint, with every request dialled through
// herald's guarded dial and never retried inside an attempt, and the
// reading of an AWS error as a failed attempt's reason.
package awsapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/netguard"
)

// Options are what an AWS service client is built from.
type Options struct {
	Region      string
	Credentials aws.CredentialsProvider
	// Endpoint is a compatible server's URL, nil for AWS's own.
	Endpoint   *string
	HTTPClient *http.Client
	// Retryer makes no retry: an attempt is one request, and herald's
	// schedule retries it (an SDK retry of a publish AWS did receive
	// would send it twice).
	Retryer aws.Retryer
}

// New returns the options of config c, reached through env.
func New(c destination.Config, env destination.Env) Options {
	dial := env.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr := &http.Transport{
		DialContext:         dial,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	o := Options{
		Region: c.String("region"),
		// The account's own key, never the credentials herald's process
		// runs with: those could reach any queue or bus herald's role can
		// (decision 0145).
		Credentials: credentials.NewStaticCredentialsProvider(c.String("accessKeyId"), c.String("secretAccessKey"), ""),
		HTTPClient:  &http.Client{Transport: tr},
		Retryer:     aws.NopRetryer{},
	}
	if ep := c.String("endpoint"); ep != "" {
		o.Endpoint = aws.String(strings.TrimRight(ep, "/"))
	}
	return o
}

// Close releases the options' idle connections.
func (o Options) Close() {
	o.HTTPClient.CloseIdleConnections()
}

// Failure says what an AWS call's error means for an attempt; service
// names the API ("SQS", "EventBridge") and what what it was called on.
func Failure(err error, service, what string) destination.Result {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return destination.Failed("timeout", service+" did not answer in time")
	case errors.Is(err, netguard.ErrBlocked):
		return destination.Failed("address_refused", service+": "+err.Error())
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return destination.Failed("connection", service+": "+err.Error())
	}
	code, msg := apiErr.ErrorCode(), apiErr.ErrorMessage()
	said := fmt.Sprintf("%s: %s (%s)", service, msg, code)
	switch {
	case strings.Contains(code, "NonExistentQueue"), code == "QueueDoesNotExist", code == "ResourceNotFoundException":
		return destination.Failed("not_found", fmt.Sprintf("%s: %s does not exist (%s); check its name and region", service, what, code))
	case code == "AccessDenied", code == "AccessDeniedException", code == "InvalidClientTokenId",
		code == "UnrecognizedClientException", code == "SignatureDoesNotMatch", code == "InvalidSignatureException",
		code == "ExpiredToken", code == "MissingAuthenticationToken", code == "KmsAccessDenied":
		return destination.Failed("unauthorized", said+"; check the access key and that its policy allows publishing to "+what)
	case strings.Contains(code, "Throttl"), code == "RequestThrottled", code == "KmsThrottled", code == "LimitExceededException":
		return destination.Failed("throttled", said)
	case strings.Contains(msg, "shorter than"), strings.Contains(strings.ToLower(msg), "too large"),
		strings.Contains(strings.ToLower(msg), "too long"):
		return destination.Failed("too_large", said)
	}
	return destination.Failed("refused", said)
}
