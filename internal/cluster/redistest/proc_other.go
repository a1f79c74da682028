//go:build !linux

package redistest

import "os/exec"

// setProcAttr does nothing where the kernel cannot tie the server's life to the test's;
// t.Cleanup still shuts the server down.
func setProcAttr(*exec.Cmd) {}
