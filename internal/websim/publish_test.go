package websim

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPublishEvery: a growing web lists one more new article per section
// every interval; the article is served once published and 404 before.
func TestPublishEvery(t *testing.T) {
	srv, client := startWeb(t, Config{Seed: 1, Hosts: 2, PagesPerHost: 10, PublishEvery: 200 * time.Millisecond})
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get(srv.URL("www.d0.test", path))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/s/1/new/1.html"); code != http.StatusNotFound {
		t.Fatalf("unpublished article answered %d, want 404", code)
	}
	if _, body := get("/s/1/"); strings.Contains(body, "/new/") {
		t.Fatal("section lists a new article before the first interval")
	}
	// Time is the subject: articles appear on the publishing interval. Poll for two of
	// them; the deadline fails a web that never publishes.
	deadline := time.Now().Add(10 * time.Second)
	for srv.Published() < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if srv.Published() < 2 {
		t.Fatal("nothing published in 10s")
	}
	_, body := get("/s/1/")
	for _, p := range []string{"/s/1/new/1.html", "/s/1/new/2.html"} {
		if !strings.Contains(body, p) {
			t.Fatalf("section page does not link %s", p)
		}
	}
	if code, _ := get("/s/1/new/2.html"); code != 200 {
		t.Fatalf("published article answered %d", code)
	}
	k, ok := NewArticle(srv.URL("www.d0.test", "/s/3/new/7.html"))
	if !ok || k != 7 {
		t.Fatalf("NewArticle = %d, %v", k, ok)
	}
	if _, ok := NewArticle(srv.URL("www.d0.test", "/s/3/a/7.html")); ok {
		t.Fatal("an ordinary article is not new")
	}
	if at := srv.PublishedAt(2); at.Sub(srv.PublishedAt(1)) != 200*time.Millisecond {
		t.Fatalf("PublishedAt(2) - PublishedAt(1) = %v", at.Sub(srv.PublishedAt(1)))
	}
	if _, err := New(Config{PublishEvery: -time.Second}); err == nil {
		t.Fatal("negative PublishEvery accepted")
	}
}
