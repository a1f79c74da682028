package crawl

import "time"

// SetRevisitClock sets the clock of e's revisit schedule (Observe's fetch
// times, TakeDue's now) for tests that move time past a back-off.
func SetRevisitClock(e *Engine, now func() time.Time) { e.rv.now = now }
