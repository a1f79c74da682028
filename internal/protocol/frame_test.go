package protocol

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestDecodeFrame(t *testing.T) {
	many := make([]string, MaxFrameURLs+1)
	for i := range many {
		many[i] = fmt.Sprintf(`"http://a.test/%d":0`, i)
	}
	for _, tc := range []struct {
		name, in, err string
	}{
		{"submit", `{"URL_set":{"http://a.test/":0,"http://b.test/x":0},"IP":"n1/h1","number":"n1/h1/7","flag":1,"depth":{"http://b.test/x":2}}`, ""},
		{"answer", `{"URL_set":{"http://a.test/":1},"IP":"n2","number":"n1/h1/7","flag":3}`, ""},
		{"flag 4", `{"URL_set":{"http://a.test/":0},"IP":"n1/h1","number":"n1/h1/7","flag":4}`, "flag"},
		{"flag string", `{"URL_set":{"http://a.test/":0},"IP":"n1/h1","number":"n1/h1/7","flag":"x"}`, "not a JSON frame"},
		{"value 2", `{"URL_set":{"http://a.test/":2},"IP":"n1/h1","number":"n1/h1/7","flag":1}`, "want 0 or 1"},
		{"empty set", `{"URL_set":{},"IP":"n1/h1","number":"n1/h1/7","flag":1}`, "URL_set has 0"},
		{"too many", `{"URL_set":{` + strings.Join(many, ",") + `},"IP":"n1/h1","number":"n1/h1/7","flag":1}`, "URL_set has 10001"},
		{"number 2 parts", `{"URL_set":{"u":0},"IP":"n1/h1","number":"n1/7","flag":1}`, "NET/HOST/SEQ"},
		{"number seq 0", `{"URL_set":{"u":0},"IP":"n1/h1","number":"n1/h1/0","flag":1}`, "sequence"},
		{"number seq 07", `{"URL_set":{"u":0},"IP":"n1/h1","number":"n1/h1/07","flag":1}`, "sequence"},
		{"bad IP", `{"URL_set":{"u":0},"IP":"n 1","number":"n1/h1/1","flag":1}`, "IP"},
		{"depth outside set", `{"URL_set":{"u":0},"IP":"n1/h1","number":"n1/h1/1","flag":1,"depth":{"v":1}}`, "not in URL_set"},
		{"negative hops", `{"URL_set":{"u":0},"IP":"n1/h1","number":"n1/h1/1","flag":1,"hops":{"u":-1}}`, "negative"},
		{"trailing", `{"URL_set":{"u":0},"IP":"n1/h1","number":"n1/h1/1","flag":1} {}`, "trailing"},
		{"not JSON", `URL_set=u`, "not a JSON frame"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := DecodeFrame([]byte(tc.in))
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				g, err := DecodeFrame(f.Encode())
				if err != nil || !reflect.DeepEqual(f, g) {
					t.Fatalf("round trip: %v %+v %+v", err, f, g)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrBadFrame) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want an ErrBadFrame containing %q", err, tc.err)
			}
		})
	}
}

// TestFrameGolden pins the wire form: the document's key names, URL → 0/1.
func TestFrameGolden(t *testing.T) {
	f := &Frame{URLSet: map[string]uint8{"http://a.test/": 0, "http://b.test/p?q=1": 1}, IP: "n1/h2", Number: "n1/h2/42", Flag: FlagAnswer}
	got := f.Encode()
	path := filepath.Join("testdata", "frame.golden")
	if *update {
		os.WriteFile(path, got, 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, bytes.TrimSpace(want)) {
		t.Errorf("frame encoding changed:\n got %s\nwant %s", got, want)
	}
}

func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte(`{"URL_set":{"http://a.test/":0},"IP":"n1/h1","number":"n1/h1/1","flag":1,"depth":{"http://a.test/":3},"hops":{"http://a.test/":1}}`))
	f.Add([]byte(`{"URL_set":{"http://a.test/":1,"x":0},"IP":"n2","number":"n1/h1/99","flag":3}`))
	f.Add([]byte(`{"URL_set":{"u":0},"IP":"n1/h1","number":"n1/h1/18446744073709551615","flag":2}`))
	f.Add([]byte(`{"URL_set":null,"flag":1.0}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := DecodeFrame(b)
		if err != nil {
			if !errors.Is(err, ErrBadFrame) {
				t.Fatalf("error not wrapping ErrBadFrame: %v", err)
			}
			return
		}
		g, err := DecodeFrame(fr.Encode())
		if err != nil {
			t.Fatalf("re-decoding an encoded frame: %v", err)
		}
		if !reflect.DeepEqual(fr, g) {
			t.Fatalf("round trip changed the frame: %+v → %+v", fr, g)
		}
	})
}

func TestParseNumber(t *testing.T) {
	n, err := ParseNumber("net-1/host.2/15")
	if err != nil || n != (Number{"net-1", "host.2", 15}) || n.String() != "net-1/host.2/15" {
		t.Fatalf("%+v %v", n, err)
	}
	for _, bad := range []string{"", "a/b", "a/b/c", "a//1", "/b/1", "a/b/-1", "a/b/1/2", "a b/c/1"} {
		if _, err := ParseNumber(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestPick: rendezvous hashing is stable, and removing a name moves only its keys.
func TestPick(t *testing.T) {
	names := []string{"h1", "h2", "h3", "h4"}
	fewer := []string{"h1", "h2", "h4"}
	count := map[string]int{}
	for i := range 4000 {
		k := fmt.Sprintf("site%d.test:80", i)
		a := Pick(k, names)
		count[a]++
		if b := Pick(k, fewer); a != "h3" && a != b {
			t.Fatalf("%s moved from %s to %s when h3 left", k, a, b)
		}
	}
	for _, n := range names {
		if count[n] < 800 || count[n] > 1200 {
			t.Errorf("%s got %d of 4000 keys", n, count[n])
		}
	}
	if Pick("x", nil) != "" {
		t.Error("Pick over no names")
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, yaml, err string }{
		{"ok", "crawl: c\nbatch: 10\nanswer_timeout: 1s\nnetworks:\n  - name: n1\n    center_redis: redis://x:1\n    hosts:\n      - id: h1\n        redis: redis://y:1\n", ""},
		{"unknown key", "crawl: c\nnetwork:\n  - name: n1\n", "field network not found"},
		{"no networks", "crawl: c\n", "no networks"},
		{"duplicate", "networks:\n  - name: n1\n    center_redis: r\n  - name: n1\n    center_redis: r\n", "listed twice"},
		{"bad batch", "batch: 20000\nnetworks:\n  - name: n1\n    center_redis: r\n", "batch is 20000"},
		{"bad duration", "flush: soon\nnetworks:\n  - name: n1\n    center_redis: r\n", "not a duration"},
		{"ttl", "heartbeat: 2s\nmember_ttl: 3s\nnetworks:\n  - name: n1\n    center_redis: r\n", "below twice the heartbeat"},
		{"host name", "networks:\n  - name: n1\n    center_redis: r\n    hosts:\n      - id: a/b\n", "only letters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".yaml")
			os.WriteFile(p, []byte(tc.yaml), 0o600)
			c, err := LoadConfig(p)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.Batch != 10 || c.Flush != Duration(DefaultFlush) || c.Networks[0].Hosts[0].ID != "h1" {
					t.Errorf("%+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}
}
