package main

import (
	"encoding/json"
	"testing"

	"github.com/spider-crawler/spider/internal/server/openapitest"
)

// TestReportJSONStyle: the --json line of a run has snake_case keys and
// its durations (latencies, CPU times) in _ms numbers (issue 20); a field
// added as server_cpu_s or Took fails here.
func TestReportJSONStyle(t *testing.T) {
	b, err := json.Marshal(report{Target: "api", Mix: "zipf", Mode: "closed", Clients: 2, Requests: 10, ReqPerSec: 5,
		P50MS: 1, P90MS: 2, P99MS: 3, MaxMS: 4, ErrorDetail: "", HitRate: 0.5, ServerCPUMS: 120, ServerCPUReqMS: 12,
		ServerRSSMB: 30, ClientCPUMS: 40, Load1: 1, UsedUp: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := openapitest.CheckStyle(b); err != nil {
		t.Errorf("%v\n%s", err, b)
	}
}
