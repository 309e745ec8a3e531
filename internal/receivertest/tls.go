package receivertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// CA is a certificate authority made for one test.
type CA struct {
	PEM  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Pair is a certificate and its key, PEM.
type Pair struct {
	CertPEM, KeyPEM string
}

// NewCA makes a certificate authority named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{PEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), cert: cert, key: key}
}

// Issue makes a certificate signed by the CA for subject cn (organisation
// org), valid until notAfter: a client certificate, or, when it names
// hosts, a server one for them.
func (ca *CA) Issue(t testing.TB, cn, org string, notAfter time.Time, hosts ...string) Pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: []string{org}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, h := range hosts {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Pair{CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}))}
}

// TLSReceiver is a Receiver over HTTPS on loopback that requires a client
// certificate signed by ClientCA: a handshake without one, or with
// another, fails, and no request is recorded. Its own certificate is
// signed by ServerCA.
type TLSReceiver struct {
	*Receiver
	ServerCA, ClientCA *CA
	mu                 sync.Mutex
	subjects           []string // of the client certificates presented
}

// NewTLSReceiver starts a TLSReceiver; it closes at the end of the test.
func NewTLSReceiver(t testing.TB) *TLSReceiver {
	t.Helper()
	r := &TLSReceiver{Receiver: &Receiver{respond: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }},
		ServerCA: NewCA(t, "receiver CA"), ClientCA: NewCA(t, "client CA")}
	srvPair := r.ServerCA.Issue(t, "127.0.0.1", "receiver", time.Now().Add(24*time.Hour), "127.0.0.1")
	cert, err := tls.X509KeyPair([]byte(srvPair.CertPEM), []byte(srvPair.KeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	clients := x509.NewCertPool()
	clients.AddCert(r.ClientCA.cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.TLS != nil && len(req.TLS.PeerCertificates) > 0 {
			r.mu.Lock()
			r.subjects = append(r.subjects, req.TLS.PeerCertificates[0].Subject.String())
			r.mu.Unlock()
		}
		r.serve(w, req)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Subjects returns the subjects of the client certificates presented.
func (r *TLSReceiver) Subjects() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.subjects...)
}
