package fault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// mwConfigKey is the Redis key where a master publishes crawl NAME's configuration for
// its workers (internal/masterworker keys.config).
func mwConfigKey(crawl string) string { return "{spider:" + crawl + "}:mw:config" }

// TestRedisConfigAttack plays an attacker who can write the crawl's Redis: once the
// master (started with --allow-private and --resolve-file, as the suite's crawls are) has
// published the crawl's configuration, the attacker rewrites it to switch the SSRF guard
// off (allow_private) and, in every other run, to point name resolution at the synthetic
// web's loopback addresses (resolve_file and resolve). A `spider worker` started
// WITHOUT --allow-private (and, in those runs, without --resolve-file) then works the
// crawl: it must not fetch a single loopback page. The web's access log must stay empty,
// and the worker must still have processed its tasks (records, none a success), so the
// test cannot pass by the worker never running.
func TestRedisConfigAttack(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	w := distWeb(t, 47)
	opt, err := redis.ParseURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	row := Row{Fault: "Redis config rewritten by an attacker (allow_private, resolve_file)", URLs: len(w.rules.Seeds)}
	var fetched, processed int
	for run := range runs(2, 20) {
		w.srv.Log().Reset()
		name := "attack" + strconv.Itoa(run)
		ownResolve := run%2 == 1 // the worker resolves with its own file; the attacker only opens the guard
		master := &node{name: "master", args: append(append([]string{"master", "--redis", rs.URL(), "--crawl", name,
			"--data", filepath.Join(t.TempDir(), "master"), "--worker-ttl", "1s", "--max-inflight", "8", "--quiet"},
			w.crawlFlags(4)...), w.rules.Seeds...), wantExit: 1} // every URL fails (forbidden-address): exit 1
		master.start(t)
		if err := alterConfig(rdb, name, w, ownResolve); err != nil {
			t.Fatalf("run %d: %v\nmaster:\n%s", run, err, tail(master.p.Output(), 1500))
		}
		row.Faults++
		wdata := filepath.Join(t.TempDir(), "w")
		args := []string{"worker", "--redis", rs.URL(), "--crawl", name, "--data", wdata, "--concurrency", "4"}
		if ownResolve {
			args = append(args, "--resolve-file", w.resolve)
		}
		worker := &node{name: "worker without --allow-private", data: wdata, args: args}
		worker.start(t)
		waitNodes(t, run, &row, []*node{master, worker}, 3*time.Minute)
		noPanic(t, "the worker", worker.p.Output())
		n := len(w.srv.Log().Entries())
		fetched += n
		for i, e := range w.srv.Log().Entries() {
			if i == 5 {
				break
			}
			t.Errorf("run %d: the worker fetched %s from loopback through the attacker's configuration", run, e.URL)
		}
		recs, _, err := Records(worker.data)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			t.Errorf("run %d: the worker recorded no task: the attack was not exercised\n%s", run, tail(worker.p.Output(), 1500))
		}
		bad := 0
		for u, r := range recs {
			processed++
			if r.Status != 0 || r.PageNo >= 0 {
				if bad++; bad <= 5 {
					t.Errorf("run %d: %s got status %d (outcome %s) through the attacker's configuration", run, u, r.Status, r.Outcome)
				}
			}
		}
		if bad > 5 {
			t.Errorf("run %d: … and %d more answers through the attacker's configuration", run, bad-5)
		}
		t.Logf("run %d (worker's own resolve file: %v): %d requests reached the web, %d tasks recorded", run, ownResolve, n, len(recs))
		row.Runs++
	}
	row.Note = fmt.Sprintf("faults = configurations rewritten; loopback requests through them: %d; worker tasks recorded: %d (URLs/run = seeds)", fetched, processed)
	report(t, row)
}

// alterConfig waits for crawl name's published configuration and rewrites it as an
// attacker would: SSRF guard off, and unless keepResolve, name resolution pointed at the
// web's loopback addresses. Both the Go field names (the JSON form) and the YAML names
// are written. It reads the key back to prove the change is in Redis.
func alterConfig(rdb *redis.Client, name string, w *web, keepResolve bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := mwConfigKey(name)
	var b []byte
	for {
		var err error
		b, err = rdb.Get(ctx, key).Bytes()
		if err == nil {
			break
		}
		if !errors.Is(err, redis.Nil) {
			return fmt.Errorf("cannot read %s: %w", key, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the master never published %s", key)
		case <-time.After(20 * time.Millisecond): // polling Redis for the master's key
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("cannot read the published configuration %s: %w", b, err)
	}
	m["AllowPrivate"], m["allow_private"] = true, true
	if !keepResolve {
		m["ResolveFile"], m["resolve_file"] = w.resolve, w.resolve
		m["Resolve"], m["resolve"] = w.srv.Resolve(), w.srv.Resolve()
	}
	nb, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := rdb.Set(ctx, key, nb, 0).Err(); err != nil {
		return fmt.Errorf("cannot write %s: %w", key, err)
	}
	back, err := rdb.Get(ctx, key).Bytes()
	if err != nil || string(back) != string(nb) {
		return fmt.Errorf("the attacker's configuration did not stick in %s (%v)", key, err)
	}
	return nil
}
