package fault

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// Bodies is the result of BodyCheck: how many records with a stored body were compared
// with the web, and the ones whose stored body is not what the web serves for their URL.
type Bodies struct {
	Checked int
	Wrong   []string // "URL: why", sorted
}

// RefWeb returns a second, in-process copy of srv's web (same configuration, same port in
// its URLs, no latency) that answers the reference bodies without touching srv's access
// log.
func RefWeb(srv *websim.Server) (*websim.Web, error) {
	cfg := srv.Config()
	cfg.Latency, cfg.SlowLatency, cfg.Logger = 0, 0, nil
	ref, err := websim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot build the reference web: %w", err)
	}
	return ref, nil
}

// Body returns what ref serves for rawURL with status 200 (ok false for any other status).
func Body(ref *websim.Web, rawURL string) (body []byte, ok bool) {
	req := httptest.NewRequest("GET", rawURL, nil)
	rec := httptest.NewRecorder()
	ref.Handler().ServeHTTP(rec, req)
	return rec.Body.Bytes(), rec.Code == 200
}

// BodyCheck checks every record of the data directory dir that points at a stored page
// (page_no ≥ 0), old records of a URL fetched twice included: the page must exist, carry
// the record's URL, and hold exactly the body ref serves for that URL. It works on a copy
// of the page files and records, so dir is never changed (not even a torn tail cut), and
// it holds for HTML pages of the ordinary web (the body is stored as served when it is
// UTF-8 HTML already).
func BodyCheck(dir string, ref *websim.Web) (Bodies, error) {
	var res Bodies
	cp, err := os.MkdirTemp("", "spider-fault-bodies-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(cp)
	if err := copyTree(filepath.Join(dir, "pages"), filepath.Join(cp, "pages")); err != nil {
		return res, err
	}
	if err := copyFile(filepath.Join(dir, store.RecordsFileName), filepath.Join(cp, store.RecordsFileName)); err != nil {
		return res, err
	}
	pf, err := store.OpenPageFiles(filepath.Join(cp, "pages"), store.Options{})
	if err != nil {
		return res, fmt.Errorf("cannot open the page files of %s: %w", dir, err)
	}
	defer pf.Close()
	recs, err := store.OpenRecords(cp, store.Options{})
	if err != nil {
		return res, fmt.Errorf("cannot open the records of %s: %w", dir, err)
	}
	defer recs.Close()
	wrong := map[string]string{}
	_, err = recs.Iterate(func(r store.Record) error {
		if r.PageNo < 0 {
			return nil
		}
		res.Checked++
		u := r.URL
		if r.FinalURL != "" {
			u = r.FinalURL
		}
		p, err := pf.Read(r.PageNo)
		switch {
		case err != nil:
			wrong[r.URL] = fmt.Sprintf("page %d cannot be read: %v", r.PageNo, err)
		case p.URL != u:
			wrong[r.URL] = fmt.Sprintf("page %d belongs to %s", r.PageNo, p.URL)
		case r.Status == 200 && strings.HasPrefix(r.ContentType, "text/html"):
			want, ok := Body(ref, u)
			if !ok {
				wrong[r.URL] = "the web does not answer 200 for it"
			} else if !bytes.Equal(p.Body, want) {
				wrong[r.URL] = fmt.Sprintf("page %d holds %d bytes (sha256 %x), the web serves %d bytes (sha256 %x)", r.PageNo,
					len(p.Body), sha256.Sum256(p.Body), len(want), sha256.Sum256(want))
			}
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("cannot read the records of %s: %w", dir, err)
	}
	for u, why := range wrong {
		res.Wrong = append(res.Wrong, u+": "+why)
	}
	sort.Strings(res.Wrong)
	return res, nil
}

// FileState is a data directory's files as a reader must leave them: the content hash of
// every file, and for the files a running crawl appends to, the bytes present.
type FileState struct {
	Hash   map[string][32]byte // relative path → sha256, files that must not change at all
	Prefix map[string][]byte   // relative path → content, files that may only grow
	Dirs   map[string]bool     // relative paths of directories
}

// appending reports whether a running single-node crawl appends to the file at rel (its
// changes while the crawl runs are the crawl's, not a reader's): page data, page index,
// records, WARC files, the state database and its lock.
func appending(rel string) bool {
	base := filepath.Base(rel)
	return strings.HasPrefix(base, store.DataFilePrefix) || base == store.IndexFileName || base == store.RecordsFileName ||
		strings.HasPrefix(rel, "state"+string(filepath.Separator)) || strings.HasPrefix(rel, "warc"+string(filepath.Separator))
}

// settled returns the part of an appended file's bytes b that a concurrent append
// cannot have made unreliable. Read through a FUSE mount (the slow lazyfs disk), a
// file's tail may read as NUL bytes while the crawl's write to it is in flight: the
// reader's open drops the cached page, the reader's read fetches it before the file
// system has applied the write, and the kernel then extends the file over that
// zero-filled page. A later open reads the written bytes. So a run of NULs at the end
// is not yet content and is left out; in the text files (page index, records), which
// never hold a NUL, the prefix ends at the first one. A reader that changed bytes
// before that point is still caught.
func settled(rel string, b []byte) []byte {
	if base := filepath.Base(rel); base == store.IndexFileName || base == store.RecordsFileName {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			return b[:i]
		}
		return b
	}
	return bytes.TrimRight(b, "\x00")
}

// TakeFileState reads every file under dir.
func TakeFileState(dir string) (FileState, error) {
	st := FileState{Hash: map[string][32]byte{}, Prefix: map[string][]byte{}, Dirs: map[string]bool{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			st.Dirs[rel] = true
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if appending(rel) {
			st.Prefix[rel] = settled(rel, b)
		} else {
			st.Hash[rel] = sha256.Sum256(b)
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("cannot read the data directory %s: %w", dir, err)
	}
	return st, nil
}

// Changed compares the directory now with before, for a reader that ran in between:
// every file outside the crawl's appends hashes the same and no file or directory
// appeared or vanished except the crawl's own; every page, index and records file still
// starts with the bytes it had (a reader's "repair" that truncated or rewrote one shows
// as a changed prefix). The state database is bbolt's to rewrite in place and is only
// required to exist still. It returns one line per difference.
func (before FileState) Changed(dir string) ([]string, error) {
	now, err := TakeFileState(dir)
	if err != nil {
		return nil, err
	}
	var diffs []string
	for rel, h := range before.Hash {
		if g, ok := now.Hash[rel]; !ok {
			diffs = append(diffs, rel+": removed")
		} else if g != h {
			diffs = append(diffs, rel+": content changed")
		}
	}
	for rel := range now.Hash {
		if _, ok := before.Hash[rel]; !ok {
			diffs = append(diffs, rel+": created")
		}
	}
	for rel, b := range before.Prefix {
		g, ok := now.Prefix[rel]
		switch {
		case !ok:
			diffs = append(diffs, rel+": removed")
		case strings.HasPrefix(rel, "state"+string(filepath.Separator)):
		case len(g) < len(b):
			diffs = append(diffs, fmt.Sprintf("%s: shrank from %d to %d bytes", rel, len(b), len(g)))
		case !bytes.Equal(g[:len(b)], b):
			i := 0
			for i < len(b) && g[i] == b[i] {
				i++
			}
			diffs = append(diffs, fmt.Sprintf("%s: the first %d bytes changed at offset %d: %q was %q", rel, len(b), i,
				g[i:min(len(g), i+160)], b[i:min(len(b), i+160)]))
		}
	}
	for rel := range now.Dirs {
		if !before.Dirs[rel] && !crawlDir(rel) {
			diffs = append(diffs, rel+"/: directory created")
		}
	}
	sort.Strings(diffs)
	return diffs, nil
}

// crawlDir reports whether a running crawl may create the directory rel itself.
func crawlDir(rel string) bool {
	switch rel {
	case "pages", "state", "warc":
		return true
	}
	return false
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == src {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		return copyFile(p, filepath.Join(dst, rel))
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
