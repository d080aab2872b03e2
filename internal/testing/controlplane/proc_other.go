//go:build !unix

package controlplane

import (
	"os/exec"
	"syscall"
)

// sysProcAttr returns no special attributes on non-Unix systems.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// terminate kills the process; there is no graceful signal here.
func terminate(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// kill kills the process.
func kill(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// processAlive conservatively reports true: stale directories are not swept.
func processAlive(int) bool { return true }
