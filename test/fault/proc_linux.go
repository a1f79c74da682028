package fault

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill the child when the test binary dies (a panic or a
// -timeout), so no crawler outlives its test.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
