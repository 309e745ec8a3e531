package delivery

import (
	"errors"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/webhook"
)

// Signed returns the headers a POST of c's body would carry at now (its
// content type, id and signatures, with their timestamp for the Standard
// Webhooks schemes), signed with c's tokens by the code that signs a POST,
// without the webhook's custom headers: what a pull webhook's event is
// read with (decision 0140), so that the libraries that verify a POST
// verify it. A pull webhook's consumer is not the receiver its custom
// headers, often credentials, are meant for.
func Signed(c attempt.Claim, now time.Time) (http.Header, error) {
	req := signed(c)
	req.Headers = nil
	h := http.Header{
		"Content-Type":          {"application/json; charset=utf-8"},
		webhook.SignatureHeader: {req.Signature},
		webhook.IDHeader:        {req.EventID},
	}
	s := &Sender{now: func() time.Time { return now }}
	if _, failed := s.sign(req, h); failed != nil {
		return nil, errors.New(failed.Err)
	}
	return h, nil
}
