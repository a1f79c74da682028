package layered

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestRoundReportJSON: a report is written with elapsed_ms (milliseconds,
// not nanoseconds) and read back; a report.json written before that
// ("elapsed_ns") still reads with its time.
func TestRoundReportJSON(t *testing.T) {
	in := RoundReport{Round: 2, URLsIn: 7, Outcomes: map[string]int{"200": 5}, Elapsed: 1500 * time.Microsecond}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"elapsed_ms":1.5`) || strings.Contains(string(b), "elapsed_ns") || !strings.Contains(string(b), `"urls_in":7`) {
		t.Errorf("report JSON %s: want elapsed_ms 1.5 and no elapsed_ns", b)
	}
	var out RoundReport
	if err := json.Unmarshal(b, &out); err != nil || out.Elapsed != in.Elapsed || out.URLsIn != 7 || out.Outcomes["200"] != 5 {
		t.Errorf("read back %+v, %v", out, err)
	}
	var old []RoundReport
	if err := json.Unmarshal([]byte(`[{"round": 1, "fetched": 3, "elapsed_ns": 2000000000}]`), &old); err != nil || len(old) != 1 || old[0].Elapsed != 2*time.Second || old[0].Fetched != 3 {
		t.Errorf("old report: %+v, %v", old, err)
	}
}
