// Package browser holds spider's end-to-end tests in a real headless
// Chromium (driven with chromedp): a search through the search page, a
// dashboard that updates during a websim crawl, and the topics views of the
// dashboard (a --topics crawl, and a topics crawl on a cluster read from a
// real redis-server). It is a module of its own
// so that chromedp stays out of spider's dependencies.
//
//	cd test/browser && go test ./...
//
// The tests build the spider binary from ../../cmd/spider and skip with a
// message when no Chromium is installed (apt-get install chromium).
// Screenshots go to $SPIDER_SCREENSHOTS, or to the test's temporary
// directory.
package browser
