package topics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/exthash"
	"github.com/spider-crawler/spider/internal/frontier"
)

func TestSetPriorityInput(t *testing.T) {
	tests := []struct {
		name    string
		topic   string
		p       int
		wantErr error
		// want is the topic's priority afterwards.
		want int
	}{
		{name: "raise", topic: "tax", p: 7, want: 7},
		{name: "lower", topic: "news", p: 0, want: 0},
		{name: "same", topic: "news", p: 2, want: 2},
		{name: "highest", topic: "food", p: MaxPriority, want: MaxPriority},
		{name: "background task", topic: OtherTopic, p: 4, want: 4},
		{name: "negative", topic: "tax", p: -1, wantErr: ErrPriorityRange},
		{name: "too high", topic: "tax", p: MaxPriority + 1, wantErr: ErrPriorityRange},
		{name: "unknown", topic: "sports", p: 1, wantErr: ErrUnknownTopic},
		{name: "empty name", topic: "", p: 1, wantErr: ErrUnknownTopic},
		{name: "a URL task is not a topic", topic: "http://food.org/today.html", p: 1, wantErr: ErrUnknownTopic},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestScheduler(t, testYAML)
			before := s.Priorities()
			err := s.SetPriority(tc.topic, tc.p)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("SetPriority(%q, %d) = %v, want %v", tc.topic, tc.p, err, tc.wantErr)
				}
				if errors.Is(err, ErrUnknownTopic) && !strings.Contains(err.Error(), "news, tax, food, (other)") {
					t.Fatalf("error %q does not name the known topics", err)
				}
				if got := s.Priorities(); !equalMaps(got, before) {
					t.Fatalf("a refused change changed the priorities: %v, was %v", got, before)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Priorities()[tc.topic]; got != tc.want {
				t.Fatalf("priority of %s = %d, want %d", tc.topic, got, tc.want)
			}
			if got := task(s, tc.topic).Priority; got != tc.want {
				t.Fatalf("task %s has P %d, want %d", tc.topic, got, tc.want)
			}
			checkLevels(t, s)
		})
	}
}

func equalMaps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// checkLevels checks the priority levels: every task in exactly one level,
// the level of its priority; no empty level; highest first; round-robin
// positions in range.
func checkLevels(t *testing.T, s *Scheduler) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[*Task]int{}
	for i, lv := range s.levels {
		if len(lv.tasks) == 0 {
			t.Fatalf("level %d is empty", lv.prio)
		}
		if i > 0 && s.levels[i-1].prio <= lv.prio {
			t.Fatalf("levels out of order: %d before %d", s.levels[i-1].prio, lv.prio)
		}
		if lv.cur < 0 || lv.cur >= len(lv.tasks) {
			t.Fatalf("level %d: round-robin position %d of %d tasks", lv.prio, lv.cur, len(lv.tasks))
		}
		for _, x := range lv.tasks {
			seen[x]++
			if x.Priority != lv.prio {
				t.Fatalf("task %s (P %d) in level %d", x.Name, x.Priority, lv.prio)
			}
		}
	}
	for _, x := range s.tasks {
		if seen[x] != 1 {
			t.Fatalf("task %s is in %d levels", x.Name, seen[x])
		}
	}
}

// TestSetPriorityLevels moves tasks through levels in sequence: new
// levels, emptied levels, a level's round robin kept.
func TestSetPriorityLevels(t *testing.T) {
	s, _ := newTestScheduler(t, testYAML)
	moves := []struct {
		topic string
		p     int
	}{
		{"tax", 2}, {"news", 0}, {"food", 9}, {"tax", 9}, {"food", 0}, {"tax", 0}, {OtherTopic, 5}, {"news", 5}, {"news", 2},
	}
	for _, m := range moves {
		if err := s.SetPriority(m.topic, m.p); err != nil {
			t.Fatal(err)
		}
		checkLevels(t, s)
	}
	want := map[string]int{"news": 2, "tax": 0, "food": 0, OtherTopic: 5}
	if got := s.Priorities(); !equalMaps(got, want) {
		t.Fatalf("priorities %v, want %v", got, want)
	}
}

// TestSetPriorityPreempts: raising a topic above the running one makes it
// pre-empt on the next Select; lowering the running one lets a topic it no
// longer outranks pre-empt it.
func TestSetPriorityPreempts(t *testing.T) {
	s, clk := newTestScheduler(t, testYAML)
	step(s, clk, 10*time.Millisecond, queuedAll, cand("tax"))
	// food and tax share level 0: food waits for tax's slice.
	if got := step(s, clk, 10*time.Millisecond, queuedAll, cand("tax"), cand("food")); got != "tax" {
		t.Fatalf("ran %s, want tax (equal priority, tax has slice left)", got)
	}
	if err := s.SetPriority("food", 3); err != nil {
		t.Fatal(err)
	}
	at := clk.Now()
	if got := step(s, clk, 10*time.Millisecond, queuedAll, cand("tax"), cand("food")); got != "food" {
		t.Fatalf("ran %s after food was raised to 3, want food", got)
	}
	tx := task(s, "tax")
	if tx.Preemptions != 1 || tx.PreemptedBy != "food" || !tx.LastPreempted.Equal(at) || tx.State != StateReady {
		t.Fatalf("tax after food's raise: %d pre-emptions by %q at %v, state %s; want 1 by food at %v, ready",
			tx.Preemptions, tx.PreemptedBy, tx.LastPreempted, tx.State, at)
	}
	// news (2) is below food (3) now; raising it to 4 pre-empts food.
	if err := s.SetPriority("news", 4); err != nil {
		t.Fatal(err)
	}
	if got := step(s, clk, 10*time.Millisecond, queuedAll, cand("tax"), cand("food"), cand("news")); got != "news" {
		t.Fatalf("ran %s, want news raised to 4", got)
	}
	if fd := task(s, "food"); fd.Preemptions != 1 || fd.PreemptedBy != "news" {
		t.Fatalf("food: %d pre-emptions by %q, want 1 by news", fd.Preemptions, fd.PreemptedBy)
	}
	// Lowering the running news to 0 hands the crawl to food (3).
	if err := s.SetPriority("news", 0); err != nil {
		t.Fatal(err)
	}
	if got := step(s, clk, 10*time.Millisecond, queuedAll, cand("tax"), cand("food"), cand("news")); got != "food" {
		t.Fatalf("ran %s after news was lowered to 0, want food (3)", got)
	}
	if nw := task(s, "news"); nw.Preemptions != 1 || nw.PreemptedBy != "food" {
		t.Fatalf("news: %d pre-emptions by %q, want 1 by food", nw.Preemptions, nw.PreemptedBy)
	}
	checkLevels(t, s)
}

// TestSetPriorityRoundRobin: a topic moved into a level takes its turns
// there, each for the new level's slice.
func TestSetPriorityRoundRobin(t *testing.T) {
	s, clk := newTestScheduler(t, testYAML)
	onlyNewsTax := func(topic string) int {
		if topic == "news" || topic == "tax" {
			return 100
		}
		return 0
	}
	if err := s.SetPriority("tax", 2); err != nil {
		t.Fatal(err)
	}
	// Level 2's slice is 300ms: 30 fetches of 10ms each, in turns.
	var turns []string
	var lens []int
	for range 150 {
		got := step(s, clk, 10*time.Millisecond, onlyNewsTax, cand("news"), cand("tax"))
		if len(turns) > 0 && turns[len(turns)-1] == got {
			lens[len(lens)-1]++
			continue
		}
		turns = append(turns, got)
		lens = append(lens, 1)
	}
	if len(turns) < 4 {
		t.Fatalf("turns %v: want news and tax alternating", turns)
	}
	for i, n := range lens[:len(lens)-1] {
		if n != 30 {
			t.Fatalf("turn %d (%s) lasted %d fetches, want the 30 of a 300ms slice: %v %v", i, turns[i], n, turns, lens)
		}
	}
}

// TestSetPrioritySlice: the slice follows the level and keeps the
// daemon's adjustment; the remaining slice moves by the same amount.
func TestSetPrioritySlice(t *testing.T) {
	tests := []struct {
		name           string
		spend          time.Duration // crawl time charged to tax first
		p              int
		wantST, wantSR time.Duration
		wantState      State
	}{
		{name: "raise fresh", p: 2, wantST: 300 * time.Millisecond, wantSR: 300 * time.Millisecond, wantState: StateRunning},
		{name: "raise partly spent", spend: 40 * time.Millisecond, p: 1, wantST: 200 * time.Millisecond, wantSR: 160 * time.Millisecond, wantState: StateRunning},
		{name: "raise spent", spend: 100 * time.Millisecond, p: 1, wantST: 200 * time.Millisecond, wantSR: 100 * time.Millisecond, wantState: StateReady},
		{name: "raise overdrawn", spend: 150 * time.Millisecond, p: 1, wantST: 200 * time.Millisecond, wantSR: 50 * time.Millisecond, wantState: StateReady},
		{name: "same", spend: 40 * time.Millisecond, p: 0, wantST: 100 * time.Millisecond, wantSR: 60 * time.Millisecond, wantState: StateRunning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := newTestScheduler(t, testYAML)
			step(s, clk, 0, queuedAll, cand("tax"))
			if tc.spend > 0 {
				s.Finished(frontier.Request{URL: cand("tax").URL, Topic: "tax"}, tc.spend, "")
			}
			if err := s.SetPriority("tax", tc.p); err != nil {
				t.Fatal(err)
			}
			tx := task(s, "tax")
			if tx.SliceTotal != tc.wantST || tx.SliceRemain != tc.wantSR || tx.State != tc.wantState {
				t.Fatalf("tax: ST %v SR %v %s; want %v %v %s", tx.SliceTotal, tx.SliceRemain, tx.State, tc.wantST, tc.wantSR, tc.wantState)
			}
		})
	}
	// The daemon's cut (75ms at level 0) is kept at level 2 (300-25ms).
	s, clk := newTestScheduler(t, testYAML)
	step(s, clk, time.Millisecond, queuedAll, cand("tax"))
	for range 3 {
		s.Finished(frontier.Request{URL: "http://tax.org/x", Topic: "tax"}, time.Millisecond, "tax refund")
	}
	s.Tick(clk.Now())
	if err := s.SetPriority("tax", 2); err != nil {
		t.Fatal(err)
	}
	if st := task(s, "tax").SliceTotal; st != 275*time.Millisecond {
		t.Fatalf("tax ST at level 2 after a daemon cut = %v, want 275ms", st)
	}
}

// TestSetPriorityURLTasks: a topic's URL tasks keep their distance to the
// topic (from the file, clamped, without drift).
func TestSetPriorityURLTasks(t *testing.T) {
	s, _ := newTestScheduler(t, testYAML)
	const u = "http://food.org/today.html" // priority 5 in food (0)
	for _, step := range []struct{ food, want int }{{3, 8}, {9, 9}, {1, 6}, {0, 5}} {
		if err := s.SetPriority("food", step.food); err != nil {
			t.Fatal(err)
		}
		if got := task(s, u).Priority; got != step.want {
			t.Fatalf("food at %d: URL task at %d, want %d", step.food, got, step.want)
		}
		checkLevels(t, s)
	}
}

// TestSetPrioritySurvivesRestart: Save/Load keep a changed priority; an
// edited file's priority wins over an older change.
func TestSetPrioritySurvivesRestart(t *testing.T) {
	tests := []struct {
		name string
		yml  string // the file at the restart
		want int    // tax's priority after Load
	}{
		{name: "same file keeps the change", yml: testYAML, want: 6},
		{name: "file edited since wins", yml: strings.Replace(testYAML, "  - name: tax\n    priority: 0", "  - name: tax\n    priority: 1", 1), want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, clk := newTestScheduler(t, testYAML)
			step(s, clk, 10*time.Millisecond, queuedAll, cand("tax"))
			if err := s.SetPriority("tax", 6); err != nil {
				t.Fatal(err)
			}
			if err := s.SetPriority("food", 2); err != nil {
				t.Fatal(err)
			}
			tb, err := exthash.Open(dir, exthash.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Save(tb); err != nil {
				t.Fatal(err)
			}
			tb.Close()

			s2, _ := newTestScheduler(t, tc.yml)
			tb, err = exthash.Open(dir, exthash.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tb.Close()
			if _, err := s2.Load(tb); err != nil {
				t.Fatal(err)
			}
			if got := task(s2, "tax").Priority; got != tc.want {
				t.Fatalf("tax after restart: priority %d, want %d", got, tc.want)
			}
			if got := task(s2, "food").Priority; got != 2 {
				t.Fatalf("food after restart: priority %d, want the changed 2", got)
			}
			if got := task(s2, "http://food.org/today.html").Priority; got != 7 {
				t.Fatalf("food's URL task after restart: priority %d, want 7", got)
			}
			if st := task(s2, "food").SliceTotal; st != 300*time.Millisecond {
				t.Fatalf("food's slice after restart = %v, want level 2's 300ms", st)
			}
			if got := s2.Status(clk.Now()); taskStatus(got, "tax").FilePriority != taskStatus(got, "tax").Priority && tc.want == 1 {
				t.Fatalf("status after the file won: %+v", taskStatus(got, "tax"))
			}
			checkLevels(t, s2)
		})
	}
}

func taskStatus(st Status, name string) TaskStatus {
	for _, t := range st.Tasks {
		if t.Name == name {
			return t
		}
	}
	return TaskStatus{}
}
