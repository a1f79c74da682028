package protocol

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/slots"
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
			slot := slots.KeySlot("{" + tag + "}")
			w := slots.Slots / Parts
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

// TestPartTagsGolden: the part tags and answered-key parts nodes have used
// since the parts were introduced. A change would strand the parts a running
// or resumed §0 crawl keeps under the old tags.
func TestPartTagsGolden(t *testing.T) {
	for addr, want := range map[string]string{
		"n1/h1":          "n1/h1#0.11 n1/h1#1.1 n1/h1#2.0 n1/h1#3.73 n1/h1#4.10 n1/h1#5.13 n1/h1#6.3 n1/h1#7.27 n1/h1#8.62 n1/h1#9.15 n1/h1#10.30 n1/h1#11.20",
		"127.0.0.1:6379": "127.0.0.1:6379#0.60 127.0.0.1:6379#1.1 127.0.0.1:6379#2.0 127.0.0.1:6379#3.142 127.0.0.1:6379#4.32 127.0.0.1:6379#5.62 127.0.0.1:6379#6.3 127.0.0.1:6379#7.56 127.0.0.1:6379#8.13 127.0.0.1:6379#9.64 127.0.0.1:6379#10.5 127.0.0.1:6379#11.20",
	} {
		var got []string
		for i := range Parts {
			got = append(got, partTag(addr, i))
		}
		if g := strings.Join(got, " "); g != want {
			t.Errorf("part tags of %s:\n got %s\nwant %s", addr, g, want)
		}
	}
	k := keysFor("c", "n1/h1")
	for number, part := range map[string]int{"1": 2, "42": 8, "123456789": 7, "n1/h1:7": 5} {
		if got, want := k.answered(number), k.parts[part]+"answered:"+number; got != want {
			t.Errorf("answered(%q) = %q, want %q", number, got, want)
		}
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

// FuzzClusterURL: ClusterURL never panics, never quotes a password in its error, and
// its clean URL carries no cluster parameter and reads the same way again.
func FuzzClusterURL(f *testing.F) {
	for _, s := range []string{"redis://h:1", "redis://u:pw@h:1?addr=h:2", "redis://h:1?cluster=true", "rediss://h:1?cluster=0&db=2",
		"redis://:secret@h:1?cluster=maybe", "redis://h:1/%zz", "", "::", "redis://h:1?cluster=true&cluster=false"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		clean, isCluster, err := ClusterURL(raw)
		if err != nil {
			if u, perr := url.Parse(raw); perr == nil {
				if pw, ok := u.User.Password(); ok && len(pw) >= 4 && strings.Contains(err.Error(), pw) {
					t.Fatalf("the error quotes the password: %v", err)
				}
			}
			return
		}
		u, perr := url.Parse(clean)
		if perr != nil {
			t.Fatalf("clean URL %q does not parse: %v", clean, perr)
		}
		if _, has := u.Query()["cluster"]; has {
			t.Fatalf("clean URL %q still has a cluster parameter", clean)
		}
		// Read again, the clean URL is the same, and names a cluster only if the first did
		// (a cluster=true it lost is the one thing it may no longer say).
		again, cl2, err := ClusterURL(clean)
		if err != nil || again != clean || cl2 && !isCluster {
			t.Fatalf("ClusterURL(%q) = %q %v %v; ClusterURL(%q) = %q %v %v", raw, clean, isCluster, nil, clean, again, cl2, err)
		}
	})
}

// TestScriptBatch: scripts a server does not know (a fresh Redis, or after SCRIPT
// FLUSH) are sent again in full, and every script of a batch runs exactly once.
func TestScriptBatch(t *testing.T) {
	onBackends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		rdb := b.rdb(t)
		incr := redis.NewScript(`return redis.call('INCR', KEYS[1])`)
		for round := range 3 {
			if round == 2 {
				b.flushScripts()
			}
			sb := newScriptBatch(rdb)
			var calls []*scriptCall
			for i := range Parts {
				calls = append(calls, sb.add(ctx, incr, []string{"{" + partTag("x", i) + "}:n"}))
			}
			if err := sb.exec(ctx); err != nil {
				t.Fatal(err)
			}
			for i, c := range calls {
				if n, err := c.cmd.Int64(); err != nil || n != int64(round+1) {
					t.Fatalf("round %d, part %d: counter %d %v, want %d (each script once)", round, i, n, err, round+1)
				}
			}
		}
	})
}
