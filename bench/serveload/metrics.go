package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// sample is one line of the Prometheus text format: name, labels, value.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseMetrics reads the Prometheus text exposition format, keeping only
// samples (comments and malformed lines are skipped). Hand-written
// because the library parser (prometheus/common/expfmt) is only an
// indirect dependency of this module, and the bench needs a few counters.
// Label values are unescaped for \" \\ and \n.
func parseMetrics(r io.Reader) ([]sample, error) {
	var out []sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if s, ok := parseSample(line); ok {
			out = append(out, s)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the metrics: %w", err)
	}
	return out, nil
}

// parseSample parses `name{a="x",b="y"} value [timestamp]`.
func parseSample(line string) (sample, bool) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return s, false
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		for {
			line = strings.TrimLeft(line, " ,")
			if strings.HasPrefix(line, "}") {
				line = line[1:]
				break
			}
			eq := strings.Index(line, `="`)
			if eq <= 0 {
				return s, false
			}
			key := line[:eq]
			line = line[eq+2:]
			var val strings.Builder
			closed := false
			for j := 0; j < len(line); j++ {
				c := line[j]
				if c == '\\' && j+1 < len(line) {
					j++
					switch line[j] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(line[j])
					}
					continue
				}
				if c == '"' {
					line, closed = line[j+1:], true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return s, false
			}
			s.labels[key] = val.String()
		}
	}
	fields := strings.Fields(line)
	if len(fields) == 0 || len(fields) > 2 {
		return s, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, false
	}
	s.value = v
	return s, true
}

// metricSum is the sum of the samples named name whose labels include
// every pair of want.
func metricSum(samples []sample, name string, want map[string]string) float64 {
	sum := 0.0
	for _, s := range samples {
		if s.name != name {
			continue
		}
		match := true
		for k, v := range want {
			if s.labels[k] != v {
				match = false
				break
			}
		}
		if match {
			sum += s.value
		}
	}
	return sum
}

// scrape reads base/metrics.
func scrape(ctx context.Context, client *http.Client, base string) ([]sample, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot read the server's /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("cannot read the server's /metrics: status %d", resp.StatusCode)
	}
	return parseMetrics(resp.Body)
}
