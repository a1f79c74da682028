package redisview

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/server/openapitest"
	"github.com/spider-crawler/spider/internal/topics"
)

const testToken = "0123456789abcdef-test-token"

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestServer(t *testing.T, opt server.Options) *server.Server {
	t.Helper()
	s, err := server.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func do(t *testing.T, h http.Handler, method, target, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func openAPIDoc(t *testing.T) *openapitest.Doc {
	t.Helper()
	doc, err := openapitest.Parse(server.OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

const serverTopicsYAML = `topics:
  - {name: news, priority: 2, seeds: ["http://news.test/"], terms: [vote]}
  - {name: tax, priority: 0, seeds: ["http://tax.test/"], terms: [refund]}
`

func newScheduler(t *testing.T) *topics.Scheduler {
	t.Helper()
	cfg, err := topics.Parse([]byte(serverTopicsYAML))
	if err != nil {
		t.Fatal(err)
	}
	s, err := topics.New(cfg, topics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func snapshotJSON(t *testing.T, v server.CrawlView) ([]byte, *server.CrawlStatus) {
	t.Helper()
	st, err := v.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n'), st
}
