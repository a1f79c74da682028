//go:build !unix

package server

// Locked reports whether a crawl process holds the data directory; on
// systems without flock it cannot tell and says false.
func Locked(dataDir string) bool { return false }
