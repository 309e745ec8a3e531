package notify

import "crypto/x509"

// TrustRoots makes s trust pool, for tests against smtptest's self-signed
// certificate. Production code trusts the system roots only.
func (s *Sender) TrustRoots(pool *x509.CertPool) {
	s.tlsConfig.RootCAs = pool
}
