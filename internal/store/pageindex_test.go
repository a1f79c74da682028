package store

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// The document's own example (SPEC §3) must come out byte for byte.
func TestIndexLineGoldenDocumentExample(t *testing.T) {
	const want = "6 14328 22 25 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012\n"
	crawled := time.Date(2012, time.March, 30, 8, 31, 34, 0, time.UTC)
	got := appendIndexLine(nil, 6, 14328, "http://www.seu.edu.cn", crawled)
	if string(got) != want {
		t.Fatalf("index line:\n got %q\nwant %q", got, want)
	}
	e, err := parseIndexLine([]byte(want), time.UTC)
	if err != nil {
		t.Fatalf("parse document example: %v", err)
	}
	if e.no != 6 || e.size != 14328 || e.url != "http://www.seu.edu.cn" || !e.crawled.Equal(crawled) {
		t.Fatalf("parsed %+v", e)
	}
}

func TestIndexLineFormat(t *testing.T) {
	shanghai := time.FixedZone("CST", 8*3600)
	tests := []struct {
		name    string
		no      int64
		size    int64
		url     string
		crawled time.Time
		want    string
	}{
		{"single-digit day padded like ctime", 0, 0, "http://a/",
			time.Date(2012, time.March, 3, 8, 1, 4, 0, time.UTC),
			"0 0 10 25 http://a/ Sat Mar  3 08:01:04 2012\n"},
		{"sub-second part dropped", 12, 1, "https://example.com/x?y=1",
			time.Date(2024, time.December, 31, 23, 59, 59, 999999999, time.UTC),
			"12 1 26 25 https://example.com/x?y=1 Tue Dec 31 23:59:59 2024\n"},
		{"url with a space stays parseable by size", 3, 5, "http://h/a b",
			time.Date(2020, time.January, 10, 0, 0, 0, 0, time.UTC),
			"3 5 13 25 http://h/a b Fri Jan 10 00:00:00 2020\n"},
		{"other location", 7, 9, "http://h/",
			time.Date(2012, time.March, 30, 0, 31, 34, 0, time.UTC).In(shanghai),
			"7 9 10 25 http://h/ Fri Mar 30 08:31:34 2012\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(appendIndexLine(nil, tt.no, tt.size, tt.url, tt.crawled))
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			e, err := parseIndexLine([]byte(got), tt.crawled.Location())
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if e.no != tt.no || e.size != tt.size || e.url != tt.url || !e.crawled.Equal(tt.crawled.Truncate(time.Second)) {
				t.Fatalf("parsed %+v", e)
			}
		})
	}
}

func TestParseIndexLineErrors(t *testing.T) {
	tests := []struct {
		name, line string
	}{
		{"empty", ""},
		{"no newline", "6 14328 22 25 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012"},
		{"three numbers", "6 14328 22 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012\n"},
		{"negative", "-6 14328 22 25 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012\n"},
		{"url size too small", "6 14328 21 25 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012\n"},
		{"url size too big", "6 14328 23 25 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012\n"},
		{"time size wrong", "6 14328 22 24 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012\n"},
		{"bad time", "6 14328 22 25 http://www.seu.edu.cn Fri Xyz 30 08:31:34 2012\n"},
		{"zero url size", "6 14328 0 25 Fri Mar 30 08:31:34 2012\n"},
		{"huge number", "6 1432800000000000000000 22 25 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012\n"},
		{"double space", "6  14328 22 25 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012\n"},
		{"trailing garbage", "6 14328 22 25 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012x\n"},
		{"NULs", "\x00\x00\x00\x00\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseIndexLine([]byte(tt.line), time.UTC)
			if !errors.Is(err, errIndexLine) {
				t.Fatalf("parseIndexLine(%q) = %v, want errIndexLine", tt.line, err)
			}
		})
	}
}

// FuzzParseIndexLine checks that parsing never panics and that whatever
// parses formats back to a line that parses to the same entry.
func FuzzParseIndexLine(f *testing.F) {
	f.Add([]byte("6 14328 22 25 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012\n"))
	f.Add([]byte("0 0 10 25 http://a/ Sat Mar  3 08:01:04 2012\n"))
	f.Add([]byte("3 5 13 25 http://h/a b Fri Jan 10 00:00:00 2020\n"))
	f.Add([]byte("1 2 3 4 5 6\n"))
	f.Add([]byte("999999999999999999 0 2 2 x \n\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := parseIndexLine(line, time.UTC)
		if err != nil {
			return
		}
		if strings.ContainsAny(e.url, "\n") {
			t.Fatalf("parsed URL %q holds a newline", e.url)
		}
		again := appendIndexLine(nil, e.no, e.size, e.url, e.crawled)
		e2, err := parseIndexLine(again, time.UTC)
		if err != nil {
			t.Fatalf("reformatted line %q does not parse: %v", again, err)
		}
		if e2.no != e.no || e2.size != e.size || e2.url != e.url || !e2.crawled.Equal(e.crawled) {
			t.Fatalf("round trip changed %+v into %+v", e, e2)
		}
		if !bytes.HasSuffix(again, []byte("\n")) {
			t.Fatalf("line %q lacks its newline", again)
		}
	})
}
