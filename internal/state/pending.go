package state

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/spider-crawler/spider/internal/frontier"
)

// A pending record's value is a frontier.Request encoding (its first byte,
// the request version, is 1 or 2), or, from state format 4 on, the compact
// form: the byte pendingCompact, then the encoding of the request with its
// Key and Seq left out. The compact form is written when Key is the URL's
// authority (authorityOf: what the politeness key is for a canonical URL
// outside per-IP mode) and Seq is the record's bucket key, so that decoding
// gives back exactly the request written. In a large frontier almost every
// URL is pending, and the key and the Seq are about 20 of the ~100 bytes a
// pending URL takes on disk.
const pendingCompact = 0xC4

// authorityOf returns the authority of an absolute URL string (between
// "://" and the first '/', '?' or '#'), or "" when u has none. It is a
// substring of u.
func authorityOf(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	rest := u[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// encodePending returns the value of the pending record of r stored under
// Seq seq: the compact form when it gives back r, r's encoding otherwise.
func encodePending(seq uint64, r frontier.Request) ([]byte, error) {
	if r.Seq != seq || r.Key == "" || authorityOf(r.URL) != r.Key {
		return r.MarshalBinary()
	}
	c := r
	c.Key, c.Seq = "", 0
	b := make([]byte, 1, 24+len(r.URL)+len(r.Topic)+len(r.Schedule))
	b[0] = pendingCompact
	return c.AppendBinary(b)
}

// decodePending decodes the pending record (k, v) into r. A compact record
// holding a Key or a Seq of its own, or under a key that is not a Seq, is
// damaged. Errors wrap frontier.ErrBadEncoding.
func decodePending(k, v []byte, r *frontier.Request) error {
	if len(v) == 0 || v[0] != pendingCompact {
		return r.UnmarshalBinary(v)
	}
	var c frontier.Request
	if err := c.UnmarshalBinary(v[1:]); err != nil {
		return err
	}
	if len(k) != 8 || c.Key != "" || c.Seq != 0 {
		return fmt.Errorf("compact pending record under key %x holds a key %q or a Seq %d of its own: %w", k, c.Key, c.Seq, frontier.ErrBadEncoding)
	}
	c.Key, c.Seq = authorityOf(c.URL), binary.BigEndian.Uint64(k)
	*r = c
	return nil
}
