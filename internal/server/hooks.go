package server

import "sync/atomic"

// slotWaitHook, when set, is called with the server by a search that found every search
// slot (Options.MaxSearches) taken, just before it waits for one. It exists for tests, which
// need to know that searches are waiting rather than sleep and hope; production code never
// sets it, and an unset hook costs one atomic load per search that has to wait.
var slotWaitHook atomic.Pointer[func(*Server)]

func callSlotWaitHook(s *Server) {
	if h := slotWaitHook.Load(); h != nil {
		(*h)(s)
	}
}
