package protocol

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Flag is a frame's kind (SPEC §0 "flag").
type Flag int

// The three flags of the document.
const (
	// FlagSubmit (1): a host asks its center to de-duplicate the set.
	FlagSubmit Flag = 1
	// FlagRequest (2): a center asks its hosts, or another network's center, which URLs
	// of the set they have seen.
	FlagRequest Flag = 2
	// FlagAnswer (3): the answer to a request, seen URLs set to 1.
	FlagAnswer Flag = 3
)

// Limits enforced by DecodeFrame.
const (
	// MaxFrameURLs bounds the URLs of one frame.
	MaxFrameURLs = 10000
	// MaxURLBytes bounds one URL.
	MaxURLBytes = 8192
	// MaxFrameBytes bounds an encoded frame.
	MaxFrameBytes = 16 << 20
	// MaxNameBytes bounds a network or host name.
	MaxNameBytes = 64
)

// ErrBadFrame is wrapped by every DecodeFrame error.
var ErrBadFrame = errors.New("bad protocol frame")

// Frame is the de-duplication protocol's unit of communication, {URL_set, IP, number,
// flag}, encoded as JSON with exactly the document's key names. Depth and Hops are an
// extension carried only by flag-1 frames: the link depth and redirect count of each URL,
// which the crawl needs once the URL survives.
type Frame struct {
	// URLSet maps each URL to 0 (not seen yet) or 1 (seen somewhere).
	URLSet map[string]uint8 `json:"URL_set"`
	// IP is the sender's node address: "NET/HOST" for a host, "NET" for a center. In a
	// request broadcast inside a network it stays the originating host's address, so that
	// host can ignore its own frame (the document's rule). Addresses are names rather than
	// IP addresses because hosts behind NAT or in containers share IPs; the transport
	// resolves a name to the node's Redis through the membership lists.
	IP string `json:"IP"`
	// Number is unique across the system: "NET/HOST/SEQ" (see Number).
	Number string `json:"number"`
	// Flag is 1, 2 or 3.
	Flag Flag `json:"flag"`
	// Depth maps URLs of a flag-1 frame to their link depth (absent = 0).
	Depth map[string]int `json:"depth,omitempty"`
	// Hops maps URLs of a flag-1 frame to the redirects followed to reach them (absent = 0).
	Hops map[string]int `json:"hops,omitempty"`
}

// Encode returns the frame's JSON. It does not validate.
func (f *Frame) Encode() []byte {
	b, _ := json.Marshal(f) // maps of strings and ints always marshal
	return b
}

// DecodeFrame parses and validates a frame: known flag, a well-formed number and
// address, 1–MaxFrameURLs URLs of at most MaxURLBytes each with values 0 or 1, and Depth
// and Hops only for URLs of the set, non-negative. Errors wrap ErrBadFrame and say what
// was wrong.
func DecodeFrame(b []byte) (*Frame, error) {
	if len(b) > MaxFrameBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d allowed", ErrBadFrame, len(b), MaxFrameBytes)
	}
	var raw struct {
		URLSet map[string]json.Number `json:"URL_set"`
		IP     string                 `json:"IP"`
		Number string                 `json:"number"`
		Flag   json.Number            `json:"flag"`
		Depth  map[string]int         `json:"depth"`
		Hops   map[string]int         `json:"hops"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: not a JSON frame object: %v", ErrBadFrame, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the frame object", ErrBadFrame)
	}
	flag, err := strconv.Atoi(raw.Flag.String())
	if err != nil || flag < 1 || flag > 3 {
		return nil, fmt.Errorf("%w: flag %q, want 1, 2 or 3", ErrBadFrame, raw.Flag.String())
	}
	f := &Frame{IP: raw.IP, Number: raw.Number, Flag: Flag(flag), Depth: raw.Depth, Hops: raw.Hops}
	if len(f.Depth) == 0 {
		f.Depth = nil // "depth":{} and no depth mean the same
	}
	if len(f.Hops) == 0 {
		f.Hops = nil
	}
	if _, err := ParseNumber(raw.Number); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	if err := CheckAddr(raw.IP); err != nil {
		return nil, fmt.Errorf("%w: IP: %v", ErrBadFrame, err)
	}
	if len(raw.URLSet) == 0 || len(raw.URLSet) > MaxFrameURLs {
		return nil, fmt.Errorf("%w: URL_set has %d URLs, want 1–%d", ErrBadFrame, len(raw.URLSet), MaxFrameURLs)
	}
	f.URLSet = make(map[string]uint8, len(raw.URLSet))
	for u, v := range raw.URLSet {
		if u == "" || len(u) > MaxURLBytes {
			return nil, fmt.Errorf("%w: URL of %d bytes in URL_set, want 1–%d", ErrBadFrame, len(u), MaxURLBytes)
		}
		switch v.String() {
		case "0":
			f.URLSet[u] = 0
		case "1":
			f.URLSet[u] = 1
		default:
			return nil, fmt.Errorf("%w: URL_set value %q for %q, want 0 or 1", ErrBadFrame, v.String(), u)
		}
	}
	for name, m := range map[string]map[string]int{"depth": f.Depth, "hops": f.Hops} {
		for u, d := range m {
			if _, ok := f.URLSet[u]; !ok {
				return nil, fmt.Errorf("%w: %s given for %q, which is not in URL_set", ErrBadFrame, name, u)
			}
			if d < 0 {
				return nil, fmt.Errorf("%w: negative %s %d for %q", ErrBadFrame, name, d, u)
			}
		}
	}
	return f, nil
}

// Number identifies a frame across the whole system: which network, which host, which
// request of that host (SPEC §0 "number"). Its text form is "NET/HOST/SEQ".
type Number struct {
	Network string
	Host    string
	Seq     uint64
}

// String returns "NET/HOST/SEQ".
func (n Number) String() string {
	return n.Network + "/" + n.Host + "/" + strconv.FormatUint(n.Seq, 10)
}

// ParseNumber parses "NET/HOST/SEQ" (names as CheckName, SEQ ≥ 1).
func ParseNumber(s string) (Number, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return Number{}, fmt.Errorf("number %q: want NET/HOST/SEQ", s)
	}
	if err := CheckName(parts[0]); err != nil {
		return Number{}, fmt.Errorf("number %q: network: %w", s, err)
	}
	if err := CheckName(parts[1]); err != nil {
		return Number{}, fmt.Errorf("number %q: host: %w", s, err)
	}
	seq, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil || seq == 0 || strconv.FormatUint(seq, 10) != parts[2] {
		return Number{}, fmt.Errorf("number %q: sequence %q, want a positive decimal integer", s, parts[2])
	}
	return Number{Network: parts[0], Host: parts[1], Seq: seq}, nil
}

// CheckName reports whether s can name a network or a host: 1–MaxNameBytes characters
// from [A-Za-z0-9._-].
func CheckName(s string) error {
	if s == "" || len(s) > MaxNameBytes {
		return fmt.Errorf("name %q: want 1–%d characters", s, MaxNameBytes)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("name %q: only letters, digits, '.', '_' and '-' are allowed", s)
		}
	}
	return nil
}

// CheckAddr reports whether s is a node address: "NET" (a center) or "NET/HOST".
func CheckAddr(s string) error {
	net, host, isHost := strings.Cut(s, "/")
	if err := CheckName(net); err != nil {
		return err
	}
	if isHost {
		return CheckName(host)
	}
	return nil
}

// HostAddr is the node address of host id in network net.
func HostAddr(net, id string) string { return net + "/" + id }

// SplitAddr splits a node address into network and host ("" for a center).
func SplitAddr(addr string) (net, host string) {
	net, host, _ = strings.Cut(addr, "/")
	return net, host
}

// URLHash is the key of a URL in finish_URL and in a center's claims: the first 16 hex
// digits of its SHA-1. SHA-1 rather than a faster hash because Redis's Lua has it built
// in (redis.sha1hex), so scripts and Go compute the same key.
func URLHash(u string) string {
	s := sha1.Sum([]byte(u))
	return hex.EncodeToString(s[:8])
}

// Pick chooses one of names for key by rendezvous (highest random weight) hashing: every
// node computes the same choice from the same list, and removing a name moves only the
// keys it had. It returns "" for an empty list.
func Pick(key string, names []string) string {
	best, bestW := "", uint64(0)
	for _, n := range names {
		d := xxhash.New()
		d.WriteString(n)
		d.Write([]byte{0})
		d.WriteString(key)
		if w := d.Sum64(); best == "" || w > bestW {
			best, bestW = n, w
		}
	}
	return best
}
