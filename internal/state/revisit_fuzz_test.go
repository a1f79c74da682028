package state

import (
	"testing"

	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
)

// FuzzDecodeRevisit: a revisit record read from disk (Open's callers,
// Inspect) never panics whatever its bytes; one that decodes encodes back
// to a record that decodes to the same values, and is refused under
// another URL's key.
func FuzzDecodeRevisit(f *testing.F) {
	for _, r := range []revisitRec{
		{req: frontier.Request{URL: "http://a/", Key: "a:80", Schedule: "\x01\x03s"}},
		{due: 1_700_000_000_000, failed: true, req: frontier.Request{URL: "http://a/x", Depth: 3, Seq: 9}},
		{due: 1, req: frontier.Request{URL: "http://a/s.xml", Kind: frontier.KindSitemap, Topic: "t", Schedule: "sched"}},
	} {
		b := r.encode()
		f.Add([]byte(r.req.URL), b)
		f.Add([]byte(r.req.URL), b[:len(b)-1])
		f.Add([]byte(r.req.URL), append([]byte{}, append(b[:2], 0x80, 0x00)...))
	}
	f.Fuzz(func(t *testing.T, url, v []byte) {
		k := dedup.KeyOf(string(url)).AppendBinary(nil)
		r, err := decodeRevisit(k, v)
		if err != nil {
			return
		}
		if r.req.URL != string(url) {
			t.Fatalf("decoded under the key of %q: %q", url, r.req.URL)
		}
		r2, err := decodeRevisit(k, r.encode())
		if err != nil || r2 != r {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", r, r2, err)
		}
		if _, err := decodeRevisit(dedup.KeyOf(string(url)+"x").AppendBinary(nil), v); err == nil {
			t.Fatalf("record of %q accepted under another URL's key", url)
		}
	})
}
