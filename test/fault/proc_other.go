//go:build !linux

package fault

import "os/exec"

// setProcAttr does nothing where the kernel cannot tie the child's life to the test's;
// the tests still kill their processes when they end.
func setProcAttr(*exec.Cmd) {}
