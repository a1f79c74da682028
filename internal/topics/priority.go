package topics

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Errors of SetPriority; both are wrapped with a message saying what was
// wrong and what to do.
var (
	// ErrUnknownTopic: no topic of the crawl has that name.
	ErrUnknownTopic = errors.New("unknown topic")
	// ErrPriorityRange: a priority outside 0..MaxPriority.
	ErrPriorityRange = errors.New("priority out of range")
)

// CheckPriority returns nil for a priority in 0..MaxPriority, else an error
// wrapping ErrPriorityRange.
func CheckPriority(p int) error {
	if p < 0 || p > MaxPriority {
		return fmt.Errorf("%w: %d: use 0 (lowest) to %d", ErrPriorityRange, p, MaxPriority)
	}
	return nil
}

// SetPriority changes the priority of topic (a topic's name, or OtherTopic
// for the background task) while the crawl runs. Errors wrap
// ErrPriorityRange (p outside 0..MaxPriority) or ErrUnknownTopic (naming
// the known topics); then nothing changes. Setting the priority a topic
// already has changes nothing and is not an error, so callers may apply the
// same override again (the cluster coordinator does, every tick).
//
// What changes, by SPEC §4:
//
//   - The topic's task moves to its new level: it leaves its old level's
//     round robin (the level's turn stays with the task that had it) and
//     joins the new level's at the end, so the tasks already there keep
//     their turns. A level left empty is dropped.
//   - Its slice follows the level: the slice total becomes the new level's
//     threshold plus what the daemon had added or taken (within the
//     daemon's bounds of the new level), and the slice remaining moves by
//     the same amount as the total (at most the total; an overdraft
//     stays). A task whose slice was spent and now has some left is ready.
//   - Its URL tasks (granularity url, IDtheme = the topic) keep their
//     distance to their theme: each gets the priority the file gave it plus
//     the topic's change (clamped to 0..MaxPriority), computed from the
//     file each time, so changes never drift.
//   - Pre-emption happens on the next Select: a raised topic with a URL
//     ready pre-empts a lower running task there (counted and time-stamped
//     as any pre-emption); a lowered running topic is pre-empted by a task
//     it no longer outranks.
//
// The new priority is saved with the task records (Save) and restored by
// Load; see Load for when the file's priority wins instead.
func (s *Scheduler) SetPriority(topic string, p int) error {
	if err := CheckPriority(p); err != nil {
		return fmt.Errorf("cannot set the priority of topic %s: %w", topic, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.topicTask(topic)
	if t == nil {
		return fmt.Errorf("cannot set the priority of topic %q: %w: the crawl's topics are %s",
			topic, ErrUnknownTopic, strings.Join(s.topicNames(), ", "))
	}
	s.setPriority(t, p)
	return nil
}

// Priorities returns every topic's current priority by name (OtherTopic
// included).
func (s *Scheduler) Priorities() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.topics))
	for _, t := range s.tasks {
		if t.Granularity == GranularityTopic {
			out[t.Name] = t.Priority
		}
	}
	return out
}

// topicTask returns the topic-granularity task named name (OtherTopic: the
// background task), or nil.
func (s *Scheduler) topicTask(name string) *Task {
	if name == OtherTopic {
		return s.other
	}
	if name == "" {
		return nil
	}
	return s.topics[name]
}

// topicNames lists the topics by name in file order, then OtherTopic.
func (s *Scheduler) topicNames() []string {
	var names []string
	for _, t := range s.tasks {
		if t.Granularity == GranularityTopic && t != s.other {
			names = append(names, t.Name)
		}
	}
	return append(names, OtherTopic)
}

// filePriority is the priority the topics file gives t.
func (s *Scheduler) filePriority(t *Task) int { return t.filePrio }

// setPriority applies p to the topic task t and its URL tasks. s.mu held.
func (s *Scheduler) setPriority(t *Task, p int) {
	delta := p - s.filePriority(t)
	s.moveTask(t, p)
	if t == s.other {
		return
	}
	for _, u := range s.tasks {
		if u.Granularity == GranularityURL && u.Theme == t.ID {
			s.moveTask(u, min(max(s.filePriority(u)+delta, 0), MaxPriority))
		}
	}
}

// moveTask puts t at priority p: its level, slice and state (see
// SetPriority). s.mu held.
func (s *Scheduler) moveTask(t *Task, p int) {
	if t.Priority == p {
		return
	}
	// Leave the old level's round robin.
	for li, lv := range s.levels {
		if lv.prio != t.Priority {
			continue
		}
		i := indexOf(lv.tasks, t)
		if i < 0 {
			break
		}
		lv.tasks = append(lv.tasks[:i], lv.tasks[i+1:]...)
		switch {
		case len(lv.tasks) == 0:
			s.levels = append(s.levels[:li], s.levels[li+1:]...)
		case i < lv.cur:
			lv.cur--
		case lv.cur >= len(lv.tasks):
			lv.cur = 0
		}
		break
	}
	// Join the new level at the end of its round robin.
	var nl *level
	for _, lv := range s.levels {
		if lv.prio == p {
			nl = lv
		}
	}
	if nl == nil {
		nl = &level{prio: p}
		s.levels = append(s.levels, nl)
		sort.Slice(s.levels, func(i, j int) bool { return s.levels[i].prio > s.levels[j].prio })
	}
	nl.tasks = append(nl.tasks, t)
	// The slice follows the level, keeping the daemon's adjustment.
	oldTotal := t.SliceTotal
	newLevel := s.cfg.LevelSlice(p)
	adj := t.SliceTotal - t.levelSlice
	t.Priority, t.levelSlice = p, newLevel
	t.SliceTotal = min(max(newLevel+adj, time.Duration(s.cfg.MinSlice)), 4*newLevel)
	t.SliceRemain = min(t.SliceRemain+t.SliceTotal-oldTotal, t.SliceTotal)
	switch {
	case t.State == StateExpired && t.SliceRemain > 0:
		t.State = StateReady
	case t.State == StateReady && t.SliceRemain <= 0:
		t.State = StateExpired
	}
}

func indexOf(ts []*Task, t *Task) int {
	for i, x := range ts {
		if x == t {
			return i
		}
	}
	return -1
}
