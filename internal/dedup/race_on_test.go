//go:build race

package dedup

// raceEnabled shrinks the single-goroutine accuracy tests under the race
// detector, which slows atomic operations about twentyfold.
const raceEnabled = true
