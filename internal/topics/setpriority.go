package topics

import (
	"fmt"
	"sort"
)

// SetPriority changes a topic's priority level while the crawl runs (a
// `spider control` override): the topic's task moves to level p, its slice
// total becomes level p's threshold (the daemon adjusts it from there) and
// its remainder stays within it. Unknown topics and levels outside
// 0..MaxPriority are errors; setting the current level is a no-op.
//
// Minimal version written for the master–worker coordinator (h1); the
// runtime priority control (h2) owns and may replace it.
func (s *Scheduler) SetPriority(topic string, p int) error {
	if p < 0 || p > MaxPriority {
		return fmt.Errorf("%w: priority %d of topic %q out of range: use 0..%d", ErrConfig, p, topic, MaxPriority)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.topics[topic]
	if !ok || topic == "" {
		return fmt.Errorf("%w: no topic %q in this crawl's topics file", ErrConfig, topic)
	}
	if t.Priority == p {
		return nil
	}
	for i, lv := range s.levels {
		if lv.prio != t.Priority {
			continue
		}
		for j, x := range lv.tasks {
			if x == t {
				lv.tasks = append(lv.tasks[:j], lv.tasks[j+1:]...)
				break
			}
		}
		if lv.cur >= len(lv.tasks) {
			lv.cur = 0
		}
		if len(lv.tasks) == 0 {
			s.levels = append(s.levels[:i], s.levels[i+1:]...)
		}
		break
	}
	t.Priority = p
	t.levelSlice = s.cfg.LevelSlice(p)
	t.SliceTotal = t.levelSlice
	t.SliceRemain = min(t.SliceRemain, t.SliceTotal)
	var lv *level
	for _, x := range s.levels {
		if x.prio == p {
			lv = x
		}
	}
	if lv == nil {
		lv = &level{prio: p}
		s.levels = append(s.levels, lv)
		sort.Slice(s.levels, func(i, j int) bool { return s.levels[i].prio > s.levels[j].prio })
	}
	lv.tasks = append(lv.tasks, t)
	return nil
}
