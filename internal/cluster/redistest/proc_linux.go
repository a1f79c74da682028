package redistest

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill redis-server when the test binary dies (a panic or a
// -timeout), so no server outlives its test.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
