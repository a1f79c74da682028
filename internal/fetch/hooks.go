package fetch

import "sync/atomic"

// flightJoinedHook, when set, is called by Resolver.LookupIP with the resolver and the
// host name once the caller has joined (or started) the single look-up of that name and
// is about to wait for it. It exists for tests, which need to know that every caller shares the flight
// rather than sleep and hope; production code never sets it, and an unset hook costs one
// atomic load per look-up that misses the cache.
var flightJoinedHook atomic.Pointer[func(r *Resolver, host string)]

func callFlightJoinedHook(r *Resolver, host string) {
	if h := flightJoinedHook.Load(); h != nil {
		(*h)(r, host)
	}
}
