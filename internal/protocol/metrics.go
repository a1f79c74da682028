package protocol

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the protocol's Prometheus series (names start with spider_protocol_).
type metrics struct {
	framesSent  *prometheus.CounterVec // flag
	bytesSent   *prometheus.CounterVec // flag
	framesRecv  *prometheus.CounterVec // flag
	badFrames   prometheus.Counter
	dropped     prometheus.Counter
	answers     *prometheus.CounterVec // outcome: ok, late, duplicate, unknown
	timeouts    *prometheus.CounterVec // who: host, network
	resent      prometheus.Counter
	urls        *prometheus.CounterVec // stage
	roundTime   *prometheus.HistogramVec
	tasksPushed prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, node string) *metrics {
	c := prometheus.Labels{"node": node}
	m := &metrics{
		framesSent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spider_protocol_frames_sent_total",
			Help: "Frames delivered to another node's inbox, by flag.", ConstLabels: c}, []string{"flag"}),
		bytesSent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spider_protocol_bytes_sent_total",
			Help: "Bytes of frames delivered, by flag.", ConstLabels: c}, []string{"flag"}),
		framesRecv: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spider_protocol_frames_received_total",
			Help: "Frames taken from this node's inbox, by flag.", ConstLabels: c}, []string{"flag"}),
		badFrames: prometheus.NewCounter(prometheus.CounterOpts{Name: "spider_protocol_bad_frames_total",
			Help: "Inbox entries that did not decode as frames (dropped).", ConstLabels: c}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "spider_protocol_undeliverable_total",
			Help: "Frames given up after the receiver stayed unreachable.", ConstLabels: c}),
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spider_protocol_answers_total",
			Help: "Answers (flag 3) received, by outcome: ok, late (round already over), duplicate, unknown (sender not in the round or not a member).", ConstLabels: c}, []string{"outcome"}),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spider_protocol_timeouts_total",
			Help: "Answers not received in time, by who: host or network.", ConstLabels: c}, []string{"who"}),
		resent: prometheus.NewCounter(prometheus.CounterOpts{Name: "spider_protocol_resent_total",
			Help: "Requests sent again to a home network that had not answered in time.", ConstLabels: c}),
		urls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spider_protocol_urls_total",
			Help: "URLs by protocol stage: submitted, local_dup (local pass), claimed_dup (center claims), network_dup (network pass), remote_dup (cross-network pass), passed.", ConstLabels: c}, []string{"stage"}),
		roundTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "spider_protocol_round_seconds",
			Help: "Time from a frame's arrival at its center to the end of a pass.", ConstLabels: c,
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"pass"}),
		tasksPushed: prometheus.NewCounter(prometheus.CounterOpts{Name: "spider_protocol_tasks_dispatched_total",
			Help: "URLs moved from task_URL into a host's task_pool.", ConstLabels: c}),
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{m.framesSent, m.bytesSent, m.framesRecv, m.badFrames, m.dropped,
			m.answers, m.timeouts, m.resent, m.urls, m.roundTime, m.tasksPushed} {
			_ = reg.Register(col) // a second node in one process shares the series
		}
	}
	return m
}
