// Command lazyfs mounts a FUSE file system that loses unsynced writes on demand, to
// simulate a power loss under a real process (as the LazyFS tool does).
//
//	lazyfs -backing DIR -mount MNT [-stats FILE] [-slow NAME=DURATION,…]
//
// The mount passes every file and directory operation through to the backing directory,
// except file data: writes (and truncations) are kept in memory, served to readers
// (read(2) and mmap(2) alike: read-your-writes), and applied to the backing file only by
// fsync/fdatasync on that file. Directory operations (create, mkdir, rename, unlink) are
// applied at once: only data is lazy. -slow delays every write to the files of a base
// name (PageIndex=5ms) before it takes effect: a slow disk, which holds a writer between
// two writes (a page's body and its index line) long enough for readers to see the gap.
//
// Signals:
//
//	SIGUSR1  crash: drop every unsynced write, make every later operation fail with EIO,
//	         write the statistics (JSON, bytes dropped per file) to -stats, and keep the
//	         mount until SIGTERM so that the caller can kill the processes using it
//	SIGTERM  exit: unmount (lazily if busy) and exit; before a crash it first applies every
//	         unsynced write (a clean shutdown) and writes the statistics
//
// "mounted" is printed on stdout once the mount is ready. It needs root and /dev/fuse; no
// fusermount is used (direct mount(2)). This is its own Go module so that the FUSE
// dependency stays out of spider's go.mod.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	backing := flag.String("backing", "", "backing directory (required)")
	mnt := flag.String("mount", "", "mount point (required)")
	stats := flag.String("stats", "", "file to write the statistics to (JSON) at a crash and at exit")
	slowFlag := flag.String("slow", "", "comma-separated NAME=DURATION: delay every write to files of base name NAME")
	flag.Parse()
	slow := map[string]time.Duration{}
	for part := range strings.SplitSeq(*slowFlag, ",") {
		if part == "" {
			continue
		}
		name, dur, ok := strings.Cut(part, "=")
		d, err := time.ParseDuration(dur)
		if !ok || name == "" || err != nil || d < 0 {
			fmt.Fprintf(os.Stderr, "lazyfs: cannot use -slow %q: want NAME=DURATION, e.g. PageIndex=5ms\n", part)
			os.Exit(2)
		}
		slow[name] = d
	}
	if *backing == "" || *mnt == "" {
		fmt.Fprintln(os.Stderr, "lazyfs: cannot start: -backing and -mount are required")
		os.Exit(2)
	}
	if err := run(*backing, *mnt, *stats, slow); err != nil {
		fmt.Fprintln(os.Stderr, "lazyfs:", err)
		os.Exit(1)
	}
}

func run(backing, mnt, statsFile string, slow map[string]time.Duration) error {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
	l, err := Mount(backing, mnt, slow)
	if err != nil {
		return err
	}
	fmt.Println("mounted")
	crashed := false
	for s := range sig {
		switch s {
		case syscall.SIGUSR1:
			if crashed {
				continue
			}
			crashed = true
			st := l.Crash()
			if err := writeStats(statsFile, st); err != nil {
				return err
			}
			fmt.Printf("crashed: dropped %d bytes in %d files\n", st.DroppedBytes, len(st.DroppedFiles))
		default:
			if !crashed {
				if err := l.SyncAll(); err != nil {
					fmt.Fprintln(os.Stderr, "lazyfs:", err)
				}
				if err := writeStats(statsFile, l.Stats()); err != nil {
					fmt.Fprintln(os.Stderr, "lazyfs:", err)
				}
			}
			if err := l.Unmount(); err != nil {
				return err
			}
			l.Wait()
			return nil
		}
	}
	return nil
}

func writeStats(path string, st Stats) error {
	if path == "" {
		return nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("cannot write the statistics: %w", err)
	}
	return os.Rename(tmp, path)
}
