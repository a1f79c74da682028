package main

import (
	"errors"
	"os"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/store"
)

// needCrawlOrIndex is crawl.CheckCrawlDir for the commands that read a
// search index (search, serve): dir passes when it holds a crawl or an
// index (the output of spider index --redis --writer holds only the
// index). It creates nothing; its error wraps crawl.ErrNoCrawl (exit 2).
func needCrawlOrIndex(dir string) error {
	err := crawl.CheckCrawlDir(dir)
	if !errors.Is(err, crawl.ErrNoCrawl) {
		return err
	}
	if fi, ierr := os.Stat(store.DataDir(dir).Index()); ierr == nil && fi.IsDir() {
		return nil
	}
	return err
}
