package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Files of a data directory that name the node using it (see NodeID and
// NodeToken).
const (
	NodeIDFile    = "NODE_ID"
	NodeTokenFile = "NODE_TOKEN"
)

// maxNodeIDLen bounds a kept node id: the limit of cluster.CheckNodeID
// (128), which this package cannot import.
const maxNodeIDLen = 128

// NodeID returns the node id kept in the data directory dir, in
// dir/NODE_ID. The first call on a directory generates it, "HOST-xxxxxx":
// the host name (os.Hostname) cut to what a node id may hold (letters,
// digits, '.', '_' and '-', at most 100 of them; "node" when nothing is
// left) plus a dash and 6 random hex digits from crypto/rand; it writes
// the file atomically (a temporary file, fsync, rename, fsync of the
// directory), so a crash leaves either no file or the whole id. Later calls
// return the same id, so a node restarted on the same directory keeps its
// id, and two directories (two nodes on one machine) never share one by
// accident. A file edited by hand is used as it is, surrounding spaces
// trimmed, if it holds 1–128 printable ASCII characters without spaces or
// braces; anything else is an error naming the file.
//
// The caller holds the directory's lock (LockDir), so no second process
// generates an id for the same directory at the same time.
func NodeID(dir string) (string, error) {
	return keepValue(dir, NodeIDFile, func() (string, error) {
		suffix, err := randomHex(3)
		if err != nil {
			return "", err
		}
		host, _ := os.Hostname()
		return sanitiseHost(host) + "-" + suffix, nil
	}, checkNodeID)
}

// NodeToken returns the random token kept in dir/NODE_TOKEN (32 hex
// digits, generated and written like NodeID's file on the first call). It
// tells the crawl's member list that a process started on this directory
// is the same node as an earlier process on it: only one process holds
// the directory's lock (LockDir) at a time, so a node restarted at once
// after a crash, whose previous heartbeat has not expired yet, takes its
// id back, while a process on another directory that claims the same id
// is refused. It guards against accidents, not attackers: it is published
// in the member list, which anyone who can write to Redis can rewrite
// anyway. A copy of the directory (with its NODE_ID and NODE_TOKEN) is the
// same node: run it only where the original no longer runs. The caller
// holds the directory's lock.
func NodeToken(dir string) (string, error) {
	return keepValue(dir, NodeTokenFile, func() (string, error) { return randomHex(16) }, func(s string) error {
		if len(s) < 8 || len(s) > maxNodeIDLen || checkNodeID(s) != nil {
			return errors.New("want 8–128 printable ASCII characters without spaces or braces")
		}
		return nil
	})
}

// keepValue reads dir/name, or generates, writes and returns a new value.
func keepValue(dir, name string, gen func() (string, error), check func(string) error) (string, error) {
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		v := strings.TrimSpace(string(b))
		if err := check(v); err != nil {
			return "", fmt.Errorf("cannot use %s (%q): %v; correct it, or delete it to have a new one generated", path, v, err)
		}
		return v, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("cannot read %s: %w", path, err)
	}
	v, err := gen()
	if err != nil {
		return "", err
	}
	if err := writeAtomic(dir, name, []byte(v+"\n")); err != nil {
		return "", err
	}
	return v, nil
}

// writeAtomic writes dir/name through a temporary file, fsync, rename and
// a directory fsync.
func writeAtomic(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("cannot create data directory %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, name+".tmp*")
	if err != nil {
		return fmt.Errorf("cannot write %s in %s: %w", name, dir, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(FileMode)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, filepath.Join(dir, name))
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s in %s (check free space and permissions): %w", name, dir, werr)
	}
	return syncDir(dir)
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cannot generate a node id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// sanitiseHost keeps the letters, digits, '.', '_' and '-' of a host name
// (others become '-'), at most 100 bytes; "node" if nothing is left.
func sanitiseHost(host string) string {
	var sb strings.Builder
	for i := 0; i < len(host) && sb.Len() < 100; i++ {
		c := host[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			sb.WriteByte(c)
		} else {
			sb.WriteByte('-')
		}
	}
	s := strings.Trim(sb.String(), "-.")
	if s == "" {
		return "node"
	}
	return s
}

// checkNodeID mirrors cluster.CheckNodeID: 1–128 bytes of printable ASCII
// other than space and the braces.
func checkNodeID(id string) error {
	if id == "" || len(id) > maxNodeIDLen {
		return fmt.Errorf("want 1–%d characters", maxNodeIDLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' || c == '{' || c == '}' {
			return errors.New("want printable ASCII without spaces or braces")
		}
	}
	return nil
}
