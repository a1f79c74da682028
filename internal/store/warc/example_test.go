package warc_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spider-crawler/spider/internal/store/warc"
)

func Example() {
	dir, _ := os.MkdirTemp("", "warc")
	defer os.RemoveAll(dir)

	w, err := warc.NewWriter(dir, "crawl", warc.Options{})
	if err != nil {
		panic(err)
	}
	err = w.WriteExchange(context.Background(), warc.Exchange{
		URL:            "http://www.seu.edu.cn/",
		RequestHeader:  http.Header{"User-Agent": {"spider"}},
		Status:         200,
		ResponseHeader: http.Header{"Content-Type": {"text/html"}},
		Body:           []byte("<html></html>"),
		IP:             "192.0.2.1",
		Fetched:        time.Date(2012, time.March, 30, 8, 31, 34, 0, time.UTC),
		OutLinks:       []string{"http://www.seu.edu.cn/news/"},
	})
	if err != nil {
		panic(err)
	}
	w.Close()

	f, _ := os.Open(filepath.Join(dir, warc.FileName("crawl", 0)))
	defer f.Close()
	r, _ := warc.NewReader(f)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		body, err := io.ReadAll(rec.Body) // also checks WARC-Block-Digest
		if err != nil {
			panic(err)
		}
		fmt.Println(rec.Type(), rec.Header.Get("WARC-Target-URI"), len(body))
	}
	// Output:
	// warcinfo  141
	// request http://www.seu.edu.cn/ 60
	// response http://www.seu.edu.cn/ 57
	// metadata http://www.seu.edu.cn/ 69
}
