package store_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spider-crawler/spider/internal/store"
)

func ExamplePageFiles() {
	dir, _ := os.MkdirTemp("", "pages")
	defer os.RemoveAll(dir)

	pages, err := store.OpenPageFiles(dir, store.Options{})
	if err != nil {
		panic(err)
	}
	crawled := time.Date(2012, time.March, 30, 8, 31, 34, 0, time.UTC)
	no, _ := pages.Append("http://www.seu.edu.cn", crawled, []byte("<html>…</html>"))
	pg, _ := pages.Read(no)
	fmt.Println(pg.No, pg.URL, pg.Crawled.Format(store.TimeLayout), string(pg.Body))
	pages.Close()

	index, _ := os.ReadFile(filepath.Join(dir, store.IndexFileName))
	fmt.Print(string(index))
	// Output:
	// 0 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012 <html>…</html>
	// 0 16 22 25 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012
}

func ExampleRecords() {
	dir, _ := os.MkdirTemp("", "records")
	defer os.RemoveAll(dir)

	recs, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		panic(err)
	}
	defer recs.Close()
	recs.Append(store.Record{URL: "http://a.example/", Status: 200, Outcome: "200", PageNo: 0})
	recs.Append(store.Record{URL: "http://a.example/missing", Status: 404, Outcome: "404", PageNo: -1})
	skipped, _ := recs.Iterate(func(r store.Record) error {
		fmt.Println(r.Status, r.URL, r.PageNo)
		return nil
	})
	fmt.Println("skipped:", skipped)
	// Output:
	// 200 http://a.example/ 0
	// 404 http://a.example/missing -1
	// skipped: 0
}
