package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// measureArg, as the first argument, makes peerbench a launcher: it runs one
// crawler and writes its resource use to a file. The launcher exists because
// a child's ru_maxrss is not its own peak when its parent is large: Go starts
// children with vfork, and the kernel carries the parent's RSS high-water mark
// through the child's exec into the child's ru_maxrss. Started by a small
// process (this launcher, a few MiB), the crawler's ru_maxrss is its own.
const measureArg = "__measure"

// usage is what the launcher writes: the crawler's wall time and rusage.
type usage struct {
	StartNS  int64 `json:"start_ns"` // the crawler's start, Unix nanoseconds (a group's wall spans several launchers)
	WallNS   int64 `json:"wall_ns"`
	UserNS   int64 `json:"user_ns"`
	SysNS    int64 `json:"sys_ns"`
	MaxRSSKB int64 `json:"maxrss_kb"`
	Exit     int   `json:"exit"`
}

// measureMain is the launcher: args are OUT_FILE PROGRAM ARGS.... It runs the
// program with this process's standard streams, kills it if the launcher
// dies, writes the crawler's pid to OUT_FILE.pid once it started and its
// usage to OUT_FILE at its end, and returns the exit code to use.
func measureMain(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "peerbench: cannot measure: want", measureArg, "OUT_FILE PROGRAM [ARGS...]")
		return 2
	}
	// Pdeathsig follows the thread that started the child: keep it.
	runtime.LockOSThread()
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	err := cmd.Start()
	if err == nil {
		// The pid file lets the frontier sampler read the crawler's /proc entry.
		_ = os.WriteFile(args[0]+".pid", []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
		err = cmd.Wait()
	}
	u := usage{StartNS: start.UnixNano(), WallNS: int64(time.Since(start))}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		u.Exit = exitErr.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "peerbench: cannot run", args[1]+":", err)
		return 2
	}
	st := cmd.ProcessState
	u.UserNS, u.SysNS = int64(st.UserTime()), int64(st.SystemTime())
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		u.MaxRSSKB = ru.Maxrss
	}
	b, _ := json.Marshal(u)
	if err := os.WriteFile(args[0], b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "peerbench: cannot write usage:", err)
		return 2
	}
	if u.Exit < 0 { // killed by a signal
		return 1
	}
	return u.Exit
}

// readUsage reads the file a launcher wrote.
func readUsage(path string) (usage, error) {
	var u usage
	b, err := os.ReadFile(path)
	if err != nil {
		return u, fmt.Errorf("cannot read the launcher's usage file: %w", err)
	}
	if err := json.Unmarshal(b, &u); err != nil {
		return u, fmt.Errorf("cannot parse the launcher's usage file: %w", err)
	}
	return u, nil
}
