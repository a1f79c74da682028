//go:build !linux

package fetch

import "testing"

// fullListener needs Linux's accept-queue behaviour to make connects hang.
func fullListener(t *testing.T) string {
	t.Skip("provoking a connect time-out needs Linux")
	return ""
}
