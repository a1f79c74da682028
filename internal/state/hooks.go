package state

import "sync/atomic"

// syncedHook, when set, is called by every Store's background fsync loop (SyncInterval)
// after each fsync, with the store and the fsync's error. It exists for tests, which
// need to know that the loop ran rather than sleep and hope; production code never sets
// it, and an unset hook costs one atomic load per background fsync.
var syncedHook atomic.Pointer[func(*Store, error)]

func callSyncedHook(s *Store, err error) {
	if h := syncedHook.Load(); h != nil {
		(*h)(s, err)
	}
}
