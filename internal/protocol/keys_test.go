package protocol

import (
	"fmt"
	"strings"
	"testing"
)

// TestPartTags: every part tag of a node lies in the middle half of its twelfth of
// the slots, so a cluster whose masters own equal slot ranges holds an equal share of
// the parts (4 of 12 on each of 3 masters with redis-cli's ranges), and every key of a
// part, or of the core, carries one tag (one slot).
func TestPartTags(t *testing.T) {
	ranges := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}} // redis-cli --cluster create, 3 masters
	for _, addr := range []string{"n1", "n1/h1", "net-2/host.3", "a"} {
		k := keysFor("crawl", addr)
		perMaster := make([]int, len(ranges))
		for i := range Parts {
			tag := partTag(addr, i)
			slot := int(crc16(tag) % keySlots)
			w := keySlots / Parts
			if slot < i*w+w/4 || slot >= i*w+3*w/4 {
				t.Errorf("%s part %d: tag %q in slot %d, outside the middle of its range", addr, i, tag, slot)
			}
			for m, r := range ranges {
				if slot >= r[0] && slot <= r[1] {
					perMaster[m]++
				}
			}
			for _, key := range []string{k.finishURL(i), k.taskPool(i), k.taskProc(i), k.urlPool(i), k.leaving(i), k.partReceived(i), k.partStats(i), k.claims(i)} {
				if !strings.Contains(key, "{"+tag+"}") {
					t.Errorf("%s: key %s does not carry its part's tag %q", addr, key, tag)
				}
			}
		}
		for m, n := range perMaster {
			if n != Parts/len(ranges) {
				t.Errorf("%s: master %d holds %d of %d parts, want %d", addr, m, n, Parts, Parts/len(ranges))
			}
		}
		for _, key := range []string{k.inbox(), k.outbox(), k.stats(), k.seq(), k.taskURL(), k.localReducePool(), k.distReducePool(), k.numbers(), k.done()} {
			if !strings.HasPrefix(key, "spider:proto:crawl:{"+addr+"}:") {
				t.Errorf("core key %s does not carry the node's tag", key)
			}
		}
	}
	if a, b := keysFor("c", "n1/h1"), keysFor("c", "n1/h1"); a != b {
		t.Error("keysFor is not deterministic")
	}
}

func TestClusterURL(t *testing.T) {
	for _, c := range []struct {
		in, clean string
		cluster   bool
		err       string
	}{
		{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0", false, ""},
		{"redis://u:pw@h1:7000?addr=h2:7001&addr=h3:7002", "redis://u:pw@h1:7000?addr=h2:7001&addr=h3:7002", true, ""},
		{"redis://h1:7000?cluster=true", "redis://h1:7000", true, ""},
		{"rediss://h1:7000?cluster=1&dial_timeout=3s", "rediss://h1:7000?dial_timeout=3s", true, ""},
		{"redis://h1:7000?cluster=false", "redis://h1:7000", false, ""},
		{"redis://:secret@h1:7000?cluster=maybe", "", false, "want cluster=true or cluster=false"},
		{"redis://:secret@h1:7000/%zz", "", false, "does not parse"},
	} {
		clean, cl, err := ClusterURL(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: error %v, want one saying %q without the password", c.in, err, c.err)
			}
			continue
		}
		if err != nil || clean != c.clean || cl != c.cluster {
			t.Errorf("%s: %q %v %v, want %q %v", c.in, clean, cl, err, c.clean, c.cluster)
		}
	}
	for u, want := range map[string]string{"redis://127.0.0.1:1?addr=127.0.0.1:2": "*redis.ClusterClient",
		"redis://127.0.0.1:1?cluster=true": "*redis.ClusterClient", "redis://127.0.0.1:1/2": "*redis.Client"} {
		rdb, err := DialURL(u)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%T", rdb); got != want {
			t.Errorf("DialURL(%s) is a %s, want a %s", u, got, want)
		}
		rdb.Close()
	}
}
