package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestRedisAuth: a password in the URL authenticates; a wrong one fails
// with a clear error that does not print the password.
func TestRedisAuth(t *testing.T) {
	rs := redistest.Start(t, redistest.Password("right-pw-4412"))
	good := fmt.Sprintf("redis://:right-pw-4412@%s/0", rs.Addr())
	// An empty Redis holds no crawl "a": status would be exit 2 for that
	// (TestUnknownCrawl); crawls answers with the right password.
	if code, out, errOut := runCLI(t, "crawls", "--redis", good); code != 0 {
		t.Fatalf("crawls with the right password: code %d\n%s%s", code, out, errOut)
	}
	bad := fmt.Sprintf("redis://:wrong-pw-9871@%s/0", rs.Addr())
	code, out, errOut := runCLI(t, "status", "--redis", bad, "--crawl", "a")
	if code == 0 {
		t.Fatal("status with a wrong password succeeded")
	}
	if strings.Contains(out+errOut, "wrong-pw-9871") {
		t.Errorf("the password was printed: %s%s", out, errOut)
	}
	if !strings.Contains(errOut, "password") {
		t.Errorf("the error does not hint at the password: %s", errOut)
	}
}

// TestRedisTLS: rediss:// with --redis-ca reaches a TLS-only redis-server
// whose certificate a private CA signed; without the CA it is refused.
func TestRedisTLS(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv(redistest.RequireEnv) != "" {
			t.Fatal("redis-server is not on PATH")
		}
		t.Skip("redis-server is not on PATH")
	}
	dir := t.TempDir()
	caPEM, certPEM, keyPEM := makeCerts(t)
	for name, b := range map[string][]byte{"ca.pem": caPEM, "srv.pem": certPEM, "srv.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("redis-server", "--port", "0", "--tls-port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--tls-cert-file", filepath.Join(dir, "srv.pem"), "--tls-key-file", filepath.Join(dir, "srv.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.pem"), "--tls-auth-clients", "no", "--save", "", "--dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := fmt.Sprintf("rediss://127.0.0.1:%d/0", port)
	ca := filepath.Join(dir, "ca.pem")
	var code int
	var out, errOut string
	// Poll (every 100 ms) until the TLS server answers; the check below fails the test
	// when it never does.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		// crawls: status of a crawl an empty Redis does not hold is exit 2.
		if code, out, errOut = runCLI(t, "crawls", "--redis", url, "--redis-ca", ca); code == 0 {
			break
		}
	}
	if code != 0 {
		t.Fatalf("crawls over TLS with --redis-ca: code %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "status", "--redis", url, "--crawl", "tls"); code == 0 || !strings.Contains(errOut, "certificate") {
		t.Errorf("TLS without the CA: code %d, %s; want a certificate error", code, errOut)
	}
}

// makeCerts returns a CA and a server certificate for 127.0.0.1 it signed.
func makeCerts(t *testing.T) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "spider test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}
