package crawl

import (
	"errors"
	"fmt"
)

// ErrNoTopics is returned (wrapped) by SetTopicPriority for a crawl that
// runs without --topics.
var ErrNoTopics = errors.New("the crawl runs without --topics")

// SetTopicPriority changes the priority of a topic of a crawl run with
// --topics while it runs (topics.Scheduler.SetPriority: the topic moves to
// its new level, a pre-emption happens at the next URL handed out) and
// saves the task records at once, so the change survives a kill; the status
// file shows it at the daemon's next tick. Errors wrap ErrNoTopics,
// topics.ErrPriorityRange (p outside 0..topics.MaxPriority) or
// topics.ErrUnknownTopic (naming the crawl's topics); then nothing changed.
// Setting the priority a topic already has does nothing (no save, no log
// line), so overrides may be applied again every tick. Call it while the
// crawl is open (before Close).
func (s *Scheduler) SetTopicPriority(topic string, p int) error {
	tr := s.topics
	if tr == nil {
		return fmt.Errorf("cannot set the priority of topic %s: %w (start it with spider crawl --topics FILE)", topic, ErrNoTopics)
	}
	before, known := tr.sched.Priorities()[topic]
	if err := tr.sched.SetPriority(topic, p); err != nil {
		return err
	}
	if known && before == p {
		return nil // unchanged: a coordinator applies its overrides every tick
	}
	if err := tr.sched.Save(tr.tcb); err != nil {
		return fmt.Errorf("the priority of topic %s is %d now, but cannot save it in the task records (the daemon tries again at its next tick): %w", topic, p, err)
	}
	tr.log.Info("topic priority changed", "topic", topic, "priority", p)
	return nil
}
