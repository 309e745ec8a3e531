package smtptest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
)

// errNoText means a MIME entity holds no text/plain part.
var errNoText = errors.New("no text/plain part")

// decode returns a message's decoded Subject and text body.
func decode(raw []byte) (subject, text string, err error) {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return "", "", fmt.Errorf("read message: %w", err)
	}
	subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		return "", "", fmt.Errorf("decode Subject: %w", err)
	}
	text, err = decodeText(textproto.MIMEHeader(msg.Header), msg.Body)
	if err != nil {
		return "", "", fmt.Errorf("decode body: %w", err)
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	return subject, strings.TrimSuffix(text, "\n"), nil
}

// decodeText returns the first text/plain part of a MIME entity, searching
// multipart entities depth first.
func decodeText(h textproto.MIMEHeader, body io.Reader) (string, error) {
	mediaType, params := "text/plain", map[string]string{"charset": "us-ascii"}
	if ct := h.Get("Content-Type"); ct != "" {
		var err error
		if mediaType, params, err = mime.ParseMediaType(ct); err != nil {
			return "", fmt.Errorf("Content-Type %q: %w", ct, err)
		}
	}
	if strings.HasPrefix(mediaType, "multipart/") {
		return firstTextPart(multipart.NewReader(body, params["boundary"]))
	}
	if mediaType != "text/plain" {
		return "", errNoText
	}
	switch cs := strings.ToLower(params["charset"]); cs {
	case "", "utf-8", "us-ascii":
	default:
		return "", fmt.Errorf("charset %q: only utf-8 and us-ascii are supported", cs)
	}
	r, err := transferDecoder(h.Get("Content-Transfer-Encoding"), body)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return "", fmt.Errorf("read text/plain: %w", err)
	}
	return string(b), nil
}

func firstTextPart(mr *multipart.Reader) (string, error) {
	for {
		// NextRawPart, not NextPart: NextPart undoes quoted-printable itself
		// and drops the header, which would leave base64 parts undecoded
		// and quoted-printable ones handled twice.
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return "", errNoText
		}
		if err != nil {
			return "", fmt.Errorf("read multipart: %w", err)
		}
		text, err := decodeText(p.Header, p)
		if !errors.Is(err, errNoText) {
			return text, err
		}
	}
}

func transferDecoder(encoding string, body io.Reader) (io.Reader, error) {
	switch e := strings.ToLower(strings.TrimSpace(encoding)); e {
	case "", "7bit", "8bit", "binary":
		return body, nil
	case "quoted-printable":
		return quotedprintable.NewReader(body), nil
	case "base64":
		// The decoder skips the \r\n that break base64 into lines.
		return base64.NewDecoder(base64.StdEncoding, body), nil
	default:
		return nil, fmt.Errorf("Content-Transfer-Encoding %q is not supported", e)
	}
}
