package fetch

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

func TestStatusOutcome(t *testing.T) {
	tests := map[int]string{
		200: "200", 404: "404", 301: "30x", 302: "30x", 304: "30x", 399: "30x",
		100: "1xx", 204: "2xx", 206: "2xx", 403: "4xx", 429: "4xx", 410: "4xx",
		500: "5xx", 503: "5xx", 599: "5xx", 0: "other", 99: "other", 600: "other", -1: "other",
	}
	for code, want := range tests {
		if got := StatusOutcome(code); got != want {
			t.Errorf("StatusOutcome(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	opErr := func(err error) error {
		return &url.Error{Op: "Get", URL: "http://x/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", err)}}
	}
	tests := []struct {
		name string
		err  error
		want Outcome
	}{
		{"nil", nil, ""},
		{"typed error wins", &Error{Outcome: OutcomeTLS, Op: "x", Err: io.EOF}, OutcomeTLS},
		{"wrapped typed error", fmt.Errorf("outer: %w", &Error{Outcome: OutcomeDNS, Op: "x", Err: errors.New("y")}), OutcomeDNS},
		{"forbidden", fmt.Errorf("dial: %w", ErrForbiddenAddress), OutcomeForbiddenAddress},
		{"redirects", fmt.Errorf("x: %w", ErrTooManyRedirects), OutcomeTooManyRedirects},
		{"dns error", &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}, OutcomeDNS},
		{"dns timeout is dns", &net.DNSError{Err: "timeout", Name: "x", IsTimeout: true}, OutcomeDNS},
		{"refused", opErr(syscall.ECONNREFUSED), OutcomeRefused},
		{"unreachable", opErr(syscall.EHOSTUNREACH), OutcomeUnreachable},
		{"net unreachable", opErr(syscall.ENETUNREACH), OutcomeUnreachable},
		{"reset", opErr(syscall.ECONNRESET), OutcomeReset},
		{"broken pipe", opErr(syscall.EPIPE), OutcomeReset},
		{"eof", &url.Error{Op: "Get", URL: "http://x/", Err: io.EOF}, OutcomeReset},
		{"short body", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), OutcomeReset},
		{"h2 stream reset", errors.New("http2: stream error: stream ID 3; INTERNAL_ERROR"), OutcomeReset},
		{"deadline", context.DeadlineExceeded, OutcomeTimeout},
		{"os deadline", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), OutcomeTimeout},
		{"net timeout", &net.OpError{Op: "dial", Err: timeoutErr{}}, OutcomeTimeout},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), OutcomeCanceled},
		{"unknown CA", fmt.Errorf("tls: %w", x509.UnknownAuthorityError{}), OutcomeTLS},
		{"hostname", x509.HostnameError{Certificate: &x509.Certificate{}, Host: "x"}, OutcomeTLS},
		{"tls text", errors.New("remote error: tls: handshake failure"), OutcomeTLS},
		{"other", errors.New("something else"), OutcomeOther},
	}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("%s: Classify(%v) = %q, want %q", tt.name, tt.err, got, tt.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestErrorFormat(t *testing.T) {
	err := &Error{Outcome: OutcomeDNS, Op: "resolve x.test", Err: errNoAddresses}
	if got, want := err.Error(), "cannot resolve x.test: no addresses found"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, errNoAddresses) {
		t.Fatal("Unwrap does not expose the cause")
	}
}
