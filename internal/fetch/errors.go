package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ErrForbiddenAddress is wrapped by every error caused by refusing to connect
// to a loopback, private, link-local, CGNAT, multicast or unspecified
// address (see Config.AllowPrivate).
var ErrForbiddenAddress = errors.New("forbidden address")

// ErrTooManyRedirects is wrapped by the error Fetch returns when a redirect
// chain is longer than Request.FollowRedirects.
var ErrTooManyRedirects = errors.New("too many redirects")

// errNoAddresses is the cause of a DNS error when a name resolved to nothing.
var errNoAddresses = errors.New("no addresses found")

// Outcome classifies why a fetch failed. The set is closed: Classify returns
// only the constants below (and "" for a nil error).
type Outcome string

// Outcomes returned by Classify.
const (
	OutcomeTimeout          Outcome = "timeout"            // connect, first-byte or total time-out
	OutcomeReset            Outcome = "reset"              // connection reset, closed early or stream reset
	OutcomeDNS              Outcome = "dns"                // name did not resolve
	OutcomeRefused          Outcome = "refused"            // connection refused
	OutcomeUnreachable      Outcome = "unreachable"        // no route to the host or network
	OutcomeForbiddenAddress Outcome = "forbidden-address"  // private address refused (ErrForbiddenAddress)
	OutcomeTLS              Outcome = "tls"                // TLS handshake or certificate failure
	OutcomeTooManyRedirects Outcome = "too-many-redirects" // ErrTooManyRedirects
	OutcomeCanceled         Outcome = "canceled"           // the caller's context was cancelled
	OutcomeOther            Outcome = "other"              // anything else
)

// Error is the error type returned by Client.Fetch, Client.RobotsFetch and
// Resolver.LookupIP. Outcome is never empty; Unwrap gives the cause, so
// errors.Is(err, ErrForbiddenAddress) and similar tests work through it.
type Error struct {
	Outcome Outcome // classification of Err
	Op      string  // what could not be done, e.g. "fetch https://example.com/"
	Err     error   // the cause
}

// Error implements error: "cannot <Op>: <cause>".
func (e *Error) Error() string { return "cannot " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// newError wraps err as an *Error for op, classifying it unless err already
// carries an outcome.
func newError(op string, err error) *Error {
	return &Error{Outcome: Classify(err), Op: op, Err: err}
}

// Classify maps an error from this package (or from net/http, net, crypto/tls)
// to an Outcome: the Outcome of the innermost *Error if there is one,
// otherwise one derived from the cause. It returns "" for nil.
func Classify(err error) Outcome {
	if err == nil {
		return ""
	}
	var fe *Error
	if errors.As(err, &fe) && fe.Outcome != "" {
		return fe.Outcome
	}
	return classifyCause(err)
}

func classifyCause(err error) Outcome {
	var (
		dnsErr     *net.DNSError
		recordErr  tls.RecordHeaderError
		verifyErr  *tls.CertificateVerificationError
		alertErr   tls.AlertError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		netErr     net.Error
	)
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		return OutcomeForbiddenAddress
	case errors.Is(err, ErrTooManyRedirects):
		return OutcomeTooManyRedirects
	case errors.As(err, &dnsErr), errors.Is(err, errNoAddresses):
		return OutcomeDNS
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	case errors.As(err, &recordErr), errors.As(err, &verifyErr), errors.As(err, &alertErr),
		errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidErr):
		return OutcomeTLS
	case errors.Is(err, syscall.ECONNREFUSED):
		return OutcomeRefused
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return OutcomeUnreachable
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return OutcomeReset
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return OutcomeTimeout
	}
	// HTTP/2 stream and connection errors are unexported types in net/http.
	msg := err.Error()
	switch {
	case strings.Contains(msg, "connection reset"), strings.Contains(msg, "stream error"),
		strings.Contains(msg, "GOAWAY"), strings.Contains(msg, "server closed"):
		return OutcomeReset
	case strings.Contains(msg, "tls: "), strings.Contains(msg, "x509: "):
		return OutcomeTLS
	}
	return OutcomeOther
}

// StatusOutcome is the result-table label of an HTTP status code (SPEC §3
// per-node HTTP table): "200" and "404" exactly, "30x" for any 3xx, and
// "1xx", "2xx", "4xx", "5xx" for the rest of their classes; codes outside
// 100–599 give "other".
func StatusOutcome(code int) string {
	switch {
	case code == 200, code == 404:
		return strconv.Itoa(code)
	case code >= 300 && code < 400:
		return "30x"
	case code >= 100 && code < 600:
		return strconv.Itoa(code/100) + "xx"
	}
	return "other"
}
