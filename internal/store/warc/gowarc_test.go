package warc

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/nlnwa/gowarc/v3"
)

// gowarcCheck reads every record of the WARC file at path with gowarc (nlnwa/gowarc, an
// independent WARC implementation kept by a web archive) under strict validation: a syntax
// error, a violation of the WARC 1.1 specification, a Content-Length that is not the
// block's length, a missing block digest or a block or payload digest that does not match
// the bytes is an error. It returns the records' WARC-Type values in file order.
func gowarcCheck(path string) ([]string, error) {
	r, err := gowarc.NewWarcFileReader(path, 0, gowarc.WithStrictValidation())
	if err != nil {
		return nil, fmt.Errorf("gowarc cannot open %s: %w", path, err)
	}
	defer r.Close()
	var types []string
	for i := 0; ; i++ {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) && rec.WarcRecord == nil {
			if len(types) == 0 {
				return nil, fmt.Errorf("gowarc: %s holds no record", path)
			}
			return types, nil
		}
		if err != nil {
			return types, fmt.Errorf("gowarc: record %d of %s (offset %d): %w", i, path, rec.Offset, err)
		}
		if len(rec.Validation) > 0 {
			return types, fmt.Errorf("gowarc: record %d of %s: %v", i, path, errors.Join(rec.Validation...))
		}
		wr := rec.WarcRecord
		if !wr.WarcHeader().Has(gowarc.WarcBlockDigest) {
			return types, fmt.Errorf("gowarc: record %d of %s (%s) has no WARC-Block-Digest: nothing to verify", i, path, wr.Type())
		}
		v, err := wr.ValidateDigest()
		if err == nil && len(v) > 0 {
			err = errors.Join(v...)
		}
		if err != nil {
			return types, fmt.Errorf("gowarc: record %d of %s (%s): %w", i, path, wr.Type(), err)
		}
		types = append(types, wr.Type().String())
		if err := rec.Close(); err != nil {
			return types, fmt.Errorf("gowarc: record %d of %s: %w", i, path, err)
		}
	}
}

// gowarcValid fails the test unless gowarc validates the WARC file at path (gowarcCheck)
// and it holds want records (want < 0: any number); it returns the records' types.
func gowarcValid(t *testing.T, path string, want int) []string {
	t.Helper()
	types, err := gowarcCheck(path)
	if err != nil {
		t.Fatal(err)
	}
	if want >= 0 && len(types) != want {
		t.Fatalf("gowarc read %d records of %s (%v), want %d", len(types), path, types, want)
	}
	return types
}

// TestGowarcValidatesOutput checks the writer's files with gowarc (the independent
// validator that replaced an optional warcio check, which skipped where warcio was not
// installed) and checks that the validator catches damage: a changed body byte, recompressed
// into a valid gzip member, must fail the digest check.
func TestGowarcValidatesOutput(t *testing.T) {
	dir := t.TempDir()
	writeExchanges(t, dir, Options{Info: []Field{{"operator", "test"}}}, testExchange(3), testExchange(4))
	path := filepath.Join(dir, "crawl-00000.warc.gz")
	types := gowarcValid(t, path, 7)
	want := []string{"warcinfo", "request", "response", "metadata", "request", "response", "metadata"}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Fatalf("record types %v, want %v", types, want)
	}

	// The negative control: the same records, uncompressed (gowarc reads plain WARC
	// too), once as written, which must validate with all 7 records, and once with one
	// body byte changed, which only the digests can tell.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	goodPath := filepath.Join(t.TempDir(), "good.warc")
	if err := os.WriteFile(goodPath, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	gowarcValid(t, goodPath, 7)
	at := bytes.Index(plain, []byte("<title>page 3</title>"))
	if at < 0 {
		t.Fatal("the response body is not in the file")
	}
	bad := bytes.Clone(plain)
	bad[at+len("<title>page ")] = '9'
	badPath := filepath.Join(t.TempDir(), "bad.warc")
	if err := os.WriteFile(badPath, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := gowarcCheck(badPath); err == nil {
		t.Fatal("gowarc validated a file whose response body was changed: the check verifies nothing")
	} else {
		t.Logf("damaged copy rejected as it must be: %v", err)
	}
}
