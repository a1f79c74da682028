package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/spider-crawler/spider/internal/crawl"
)

// fakeEngine stands for crawl.Engine.
type fakeEngine struct {
	state string
	err   error
	seeds []string
	stops int
}

func (f *fakeEngine) Progress() crawl.Progress {
	return crawl.Progress{Queued: 5, InFlight: 2, Hosts: 3}
}
func (f *fakeEngine) RunState() string { return f.state }
func (f *fakeEngine) Pause() error     { return f.err }
func (f *fakeEngine) Resume() error    { return f.err }
func (f *fakeEngine) Stop()            { f.stops++ }
func (f *fakeEngine) AddSeeds(_ context.Context, urls []string) (int, error) {
	f.seeds = append(f.seeds, urls...)
	return len(urls), f.err
}

func TestEngineView(t *testing.T) {
	ctx := context.Background()
	eng := &fakeEngine{state: crawl.StateRunning}
	v := NewEngineView(eng, t.TempDir(), nil)
	st, err := v.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Source != "in-process" || st.State != "running" || !st.Control || st.Queue == nil || st.Queue.Queued != 5 || st.Queue.InFlight != 2 {
		t.Fatalf("snapshot %+v", st)
	}
	tests := []struct {
		seeds []string
		want  error
	}{
		{[]string{"http://a.test/", "https://b.test/x"}, nil},
		{[]string{"http://a.test/", "ftp://b.test/"}, ErrInvalid},
		{[]string{"/relative"}, ErrInvalid},
		{[]string{"http://"}, ErrInvalid},
	}
	for _, tc := range tests {
		eng.seeds = nil
		_, err := v.AddSeeds(ctx, tc.seeds)
		if !errors.Is(err, tc.want) || (tc.want != nil && len(eng.seeds) > 0) {
			t.Errorf("AddSeeds(%q): err %v, engine got %q", tc.seeds, err, eng.seeds)
		}
	}
	eng.err = fmt.Errorf("cannot pause: %w", crawl.ErrNotRunning)
	if err := v.Pause(ctx); !errors.Is(err, ErrConflict) {
		t.Errorf("Pause of a crawl not running: %v, want ErrConflict", err)
	}
	if err := v.SetTopicPriority(ctx, "news", 1); !errors.Is(err, ErrUnsupported) {
		t.Errorf("SetTopicPriority: %v", err)
	}
	if err := v.Stop(ctx); err != nil || eng.stops != 1 {
		t.Fatalf("Stop: %v, %d stops", err, eng.stops)
	}
	v.Finished()
	if st, _ = v.Snapshot(ctx); st.State != "finished" || st.Control {
		t.Fatalf("after Finished: state %q control %v", st.State, st.Control)
	}
	if err := v.Resume(ctx); !errors.Is(err, ErrConflict) {
		t.Fatalf("Resume after Finished: %v", err)
	}
}
