package store

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// TimeLayout is the layout of the crawl-time text in PageIndex: C's ctime()
// format, which reproduces the document's "Fri Mar 30 08:31:34 2012".
const TimeLayout = time.ANSIC

// indexEntry is one parsed PageIndex line.
type indexEntry struct {
	no      int64
	size    int64
	url     string
	crawled time.Time
}

// errIndexLine is wrapped by every parseIndexLine error.
var errIndexLine = errors.New("malformed page index line")

// appendIndexLine appends the PageIndex line of a page to b:
// "no size urlSize timeSize url time\n", where each text size counts the text
// plus the byte that ends it (the space after the URL, the newline after the
// time), as in the document's example.
func appendIndexLine(b []byte, no, size int64, url string, crawled time.Time) []byte {
	var tb [len(TimeLayout) + 8]byte
	ts := crawled.AppendFormat(tb[:0], TimeLayout)
	b = strconv.AppendInt(b, no, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, size, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(url))+1, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(ts))+1, 10)
	b = append(b, ' ')
	b = append(b, url...)
	b = append(b, ' ')
	b = append(b, ts...)
	return append(b, '\n')
}

// parseIndexLine parses one complete PageIndex line, including its final
// newline, with the crawl-time text read in loc. Errors wrap errIndexLine.
func parseIndexLine(line []byte, loc *time.Location) (indexEntry, error) {
	var nums [4]int64
	rest := line
	for i := range nums {
		sp := bytes.IndexByte(rest, ' ')
		if sp < 0 {
			return indexEntry{}, fmt.Errorf("%w: want 4 numbers before the URL, found %d", errIndexLine, i)
		}
		n, err := parseSize(rest[:sp])
		if err != nil {
			return indexEntry{}, fmt.Errorf("%w: field %d: %w", errIndexLine, i+1, err)
		}
		nums[i] = n
		rest = rest[sp+1:]
	}
	no, size, urlSize, timeSize := nums[0], nums[1], nums[2], nums[3]
	if urlSize < 2 || timeSize < 2 {
		return indexEntry{}, fmt.Errorf("%w: text sizes %d and %d must be at least 2", errIndexLine, urlSize, timeSize)
	}
	if int64(len(rest)) != urlSize+timeSize {
		return indexEntry{}, fmt.Errorf("%w: texts take %d bytes, sizes say %d", errIndexLine, len(rest), urlSize+timeSize)
	}
	urlText, timeText := rest[:urlSize], rest[urlSize:]
	if urlText[urlSize-1] != ' ' {
		return indexEntry{}, fmt.Errorf("%w: URL text of %d bytes is not followed by a space", errIndexLine, urlSize-1)
	}
	if timeText[timeSize-1] != '\n' {
		return indexEntry{}, fmt.Errorf("%w: line does not end after the crawl-time text", errIndexLine)
	}
	urlText, timeText = urlText[:urlSize-1], timeText[:timeSize-1]
	if bytes.IndexByte(urlText, '\n') >= 0 {
		return indexEntry{}, fmt.Errorf("%w: URL text holds a newline", errIndexLine)
	}
	crawled, err := time.ParseInLocation(TimeLayout, string(timeText), loc)
	if err != nil {
		return indexEntry{}, fmt.Errorf("%w: crawl time: %w", errIndexLine, err)
	}
	return indexEntry{no: no, size: size, url: string(urlText), crawled: crawled}, nil
}

// parseSize parses a non-negative decimal of at most 18 digits (no sign, no
// spaces), so that sums of sizes cannot overflow an int64.
func parseSize(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 18 {
		return 0, fmt.Errorf("number %q must have 1 to 18 digits", b)
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("number %q holds a non-digit", b)
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}
