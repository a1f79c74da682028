package revisit

import (
	"strconv"
	"strings"
	"time"
)

// Class is a failed fetch's failure class, which chooses its retry back-off.
type Class uint8

// The failure classes.
const (
	ClassNone Class = iota
	// ClassDNS: the host name did not resolve (often the network, or a DNS outage:
	// not final for days).
	ClassDNS
	// ClassConnect: connection refused, reset or unreachable.
	ClassConnect
	// ClassTimeout: no answer in time.
	ClassTimeout
	// ClassServer: a 5xx answer (500, 502, 504 …).
	ClassServer
	// ClassThrottled: 429 or 503 (Retry-After honoured).
	ClassThrottled
	// ClassNotFound: 404 (a page may come back: confirmed once before it is final).
	ClassNotFound
	// ClassGone: 410 (final at once).
	ClassGone
	// ClassProtocol: an answer that cannot be used (a 304 to an unconditional request,
	// a broken body, a bad redirect).
	ClassProtocol
	numClasses
)

var classNames = [numClasses]string{"", "dns", "connect", "timeout", "server", "throttled", "not-found", "gone", "protocol"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// ParseClass reads a class name; unknown names are ClassNone.
func ParseClass(s string) Class {
	s = strings.ToLower(strings.TrimSpace(s))
	for i, n := range classNames {
		if i > 0 && n == s {
			return Class(i)
		}
	}
	return ClassNone
}

// Backoff is the retry schedule of a class: the first delay, multiplied by Factor at
// each further failure up to Cap, final after Attempts failures in a row (0: never
// final).
type Backoff struct {
	First    time.Duration
	Factor   float64
	Cap      time.Duration
	Attempts int
}

// Backoffs is the retry schedule by class. A DNS failure is retried for about a week
// (1m, 4m, 16m, 1h, 4h, 17h, then daily) before it is final; a 410 is final at once.
var Backoffs = [numClasses]Backoff{
	ClassNone:      {First: time.Minute, Factor: 2, Cap: time.Hour, Attempts: 5},
	ClassDNS:       {First: time.Minute, Factor: 4, Cap: 24 * time.Hour, Attempts: 12},
	ClassConnect:   {First: 30 * time.Second, Factor: 4, Cap: 12 * time.Hour, Attempts: 10},
	ClassTimeout:   {First: time.Minute, Factor: 4, Cap: 12 * time.Hour, Attempts: 8},
	ClassServer:    {First: time.Minute, Factor: 3, Cap: 6 * time.Hour, Attempts: 8},
	ClassThrottled: {First: 30 * time.Second, Factor: 2, Cap: time.Hour, Attempts: 20},
	ClassNotFound:  {First: 24 * time.Hour, Factor: 1, Cap: 24 * time.Hour, Attempts: 2},
	ClassGone:      {Attempts: 1},
	ClassProtocol:  {First: 10 * time.Minute, Factor: 2, Cap: 24 * time.Hour, Attempts: 5},
}

// RetryAfter returns the delay before retrying after the attempt-th failure in a row
// (1 for the first) of class c, or final when the URL should not be tried again. A
// server's Retry-After (serverSaid > 0) is honoured for ClassThrottled and ClassServer,
// up to the class's cap.
func RetryAfter(c Class, attempt int, serverSaid time.Duration) (delay time.Duration, final bool) {
	if c >= numClasses {
		c = ClassNone
	}
	b := Backoffs[c]
	if b.Attempts > 0 && attempt >= b.Attempts {
		return 0, true
	}
	d := float64(b.First)
	for i := 1; i < attempt && d < float64(b.Cap); i++ {
		d *= b.Factor
	}
	delay = min(time.Duration(d), b.Cap)
	if serverSaid > 0 && (c == ClassThrottled || c == ClassServer) {
		delay = min(max(delay, serverSaid), b.Cap)
	}
	return delay, false
}
