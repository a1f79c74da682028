package cluster

import (
	"context"
	"testing"
	"time"
)

// testCtx is a context that ends with the test (or after 60 s).
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustKeys(t testing.TB, crawl string) Keys {
	t.Helper()
	k, err := NewKeys(crawl)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// eventually polls cond every 10 ms until it holds, and fails the test when d passes
// first.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// convergeWithin bounds how long ownership may take to settle after a
// change. It is a liveness deadline, not a speed claim: the full race-enabled
// suite on a 2-core CI machine can stretch a settle of well under a second
// to several.
const convergeWithin = 30 * time.Second
