package slots

import (
	"context"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestCRC16: the check value of CRC-16/XMODEM that the Redis Cluster
// specification gives, and edge cases. Fails if the polynomial, the initial
// value or the bit order change.
func TestCRC16(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint16
	}{
		{"123456789", 0x31C3}, // the specification's test vector
		{"", 0},
		{"A", 0x58E5},
	} {
		if got := CRC16(c.in); got != c.want {
			t.Errorf("CRC16(%q) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

// keyCases are the hash-tag rule's cases of the Redis Cluster
// specification and of the CLUSTER KEYSLOT documentation, with the text
// hashed.
var keyCases = []struct{ key, tag string }{
	{"somekey", "somekey"},
	{"foo{hash_tag}", "hash_tag"},
	{"bar{hash_tag}", "hash_tag"},
	{"{user1000}.following", "user1000"},
	{"{user1000}.followers", "user1000"},
	{"foo{}{bar}", "foo{}{bar}"}, // an empty tag: the whole key
	{"foo{{bar}}zap", "{bar"},    // the first '{' to the next '}'
	{"foo{bar}{zap}", "bar"},     // only the first tag
	{"{", "{"},
	{"}{", "}{"},
	{"no braces", "no braces"},
	{"spider:C:{b7}:owner", "b7"},
	{"spider:proto:c:{n1/h1#3.12}:claims", "n1/h1#3.12"},
	{"", ""},
}

// TestKeySlot: the documented slots (CLUSTER KEYSLOT somekey = 11058,
// foo{hash_tag} = 2515) and the hash-tag rule. Fails if a tag is taken
// from the wrong braces or the slot is not CRC16 mod 16384.
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]int{"somekey": 11058, "foo{hash_tag}": 2515, "bar{hash_tag}": 2515} {
		if got := KeySlot(key); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d (the CLUSTER KEYSLOT documentation)", key, got, want)
		}
	}
	for _, c := range keyCases {
		if got := HashTag(c.key); got != c.tag {
			t.Errorf("HashTag(%q) = %q, want %q", c.key, got, c.tag)
		}
		if got, want := KeySlot(c.key), int(CRC16(c.tag)%Slots); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", c.key, got, want)
		}
	}
	if KeySlot("{user1000}.following") != KeySlot("{user1000}.followers") {
		t.Error("two keys with one tag in different slots")
	}
}

// TestKeySlotRedis: KeySlot agrees with a real redis-server's CLUSTER
// KEYSLOT on the cases above, on every SpreadTag key and on a range of
// generated keys. Fails on any disagreement; skips without redis-server.
func TestKeySlotRedis(t *testing.T) {
	c := redistest.StartCluster(t, 1)
	rdb := c.Client()
	ctx := context.Background()
	keys := []string{}
	for _, kc := range keyCases {
		if kc.key != "" {
			keys = append(keys, kc.key)
		}
	}
	for _, p := range []string{"mw-", "ly-", "rk-", "ix-", "dd-"} {
		for i := range 12 {
			keys = append(keys, "spider:C:{"+SpreadTag(p, i, 12)+"}:x")
		}
	}
	for i := range 300 {
		keys = append(keys, strings.Repeat("k", i%7)+"{x"+string(rune('a'+i%26))+"}"+string(rune(0x100+i)))
	}
	for _, k := range keys {
		want, err := rdb.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", k, err)
		}
		if got := KeySlot(k); int64(got) != want {
			t.Errorf("KeySlot(%q) = %d, CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
}

// TestSpreadTagGolden: the tags the topologies have used since they spread
// their keys (master–worker's and layered's shards, rank's and the index
// build's parts, the duplicate tables), for 12 and 3 parts. A change would
// strand every key a running or resumed crawl wrote under the old tags.
func TestSpreadTagGolden(t *testing.T) {
	for _, c := range []struct {
		prefix string
		n      int
		tags   string
	}{
		{"mw-", 12, "mw-0-15 mw-1-23 mw-2-22 mw-3-42 mw-4-2 mw-5-1 mw-6-3 mw-7-49 mw-8-2 mw-9-20 mw-10-21 mw-11-40"},
		{"mw-", 3, "mw-0-2 mw-1-3 mw-2-3"},
		{"ly-", 12, "ly-0-41 ly-1-9 ly-2-43 ly-3-6 ly-4-13 ly-5-43 ly-6-41 ly-7-0 ly-8-21 ly-9-0 ly-10-13 ly-11-1"},
		{"ly-", 3, "ly-0-2 ly-1-0 ly-2-3"},
		{"rk-", 12, "rk-0-62 rk-1-25 rk-2-42 rk-3-13 rk-4-7 rk-5-0 rk-6-2 rk-7-10 rk-8-3 rk-9-48 rk-10-3 rk-11-0"},
		{"rk-", 3, "rk-0-3 rk-1-2 rk-2-2"},
		{"ix-", 12, "ix-0-4 ix-1-12 ix-2-2 ix-3-42 ix-4-0 ix-5-3 ix-6-20 ix-7-27 ix-8-0 ix-9-11 ix-10-10 ix-11-40"},
		{"ix-", 3, "ix-0-0 ix-1-1 ix-2-0"},
		{"dd-", 12, "dd-0-0 dd-1-20 dd-2-2 dd-3-12 dd-4-0 dd-5-3 dd-6-41 dd-7-19 dd-8-0 dd-9-63 dd-10-17 dd-11-1"},
		{"dd-", 3, "dd-0-0 dd-1-1 dd-2-1"},
	} {
		var got []string
		for i := range c.n {
			got = append(got, SpreadTag(c.prefix, i, c.n))
		}
		if g := strings.Join(got, " "); g != c.tags {
			t.Errorf("SpreadTag(%q, i, %d):\n got %s\nwant %s", c.prefix, c.n, g, c.tags)
		}
	}
}

// TestSpreadTagRanges: part i of n lies in the i-th of n slot ranges for
// every n up to 16, so the parts spread evenly over equal-range masters.
func TestSpreadTagRanges(t *testing.T) {
	for n := 1; n <= 16; n++ {
		for i := range n {
			tag := SpreadTag("t-", i, n)
			if !strings.HasPrefix(tag, "t-") {
				t.Fatalf("SpreadTag = %q, not under its prefix", tag)
			}
			if s := KeySlot("{" + tag + "}"); s < i*Slots/n || s >= (i+1)*Slots/n {
				t.Errorf("SpreadTag(t-, %d, %d) = %q in slot %d, outside [%d, %d)", i, n, tag, s, i*Slots/n, (i+1)*Slots/n)
			}
		}
	}
}

// FuzzKeySlot: KeySlot is in range and equals the slot of the tag alone
// (so keys sharing a tag share a slot), for any bytes.
func FuzzKeySlot(f *testing.F) {
	for _, c := range keyCases {
		f.Add(c.key)
	}
	f.Fuzz(func(t *testing.T, key string) {
		s := KeySlot(key)
		if s < 0 || s >= Slots {
			t.Fatalf("KeySlot(%q) = %d, out of range", key, s)
		}
		if tag := HashTag(key); tag != key && KeySlot("{"+tag+"}:other") != s {
			t.Fatalf("KeySlot(%q) = %d, but its tag %q hashes elsewhere", key, s, tag)
		}
	})
}
