package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// statusPlugin is the binary that implements `confighash status`: a
// separate program, so that bin/confighash (a Helm post-renderer whose
// start-up time counts) does not link a Kubernetes client.
const statusPlugin = "kubectl-confighash"

// runStatus runs `kubectl-confighash status ARGS`, found next to this
// executable or on PATH, with the same standard streams, and returns its
// exit code.
func runStatus(args []string, stdio IO) int {
	path, err := findPlugin(os.Executable, exec.LookPath)
	if err != nil {
		return exit(err, stdio)
	}
	cmd := exec.Command(path, append([]string{"status"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, stdio.Err
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		return ee.ExitCode()
	}
	return exit(err, stdio)
}

// findPlugin looks for kubectl-confighash next to the running executable,
// then on PATH.
func findPlugin(executable func() (string, error), lookPath func(string) (string, error)) (string, error) {
	if self, err := executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(self); err == nil {
			self = resolved
		}
		candidate := filepath.Join(filepath.Dir(self), statusPlugin)
		if fi, err := os.Stat(candidate); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return candidate, nil
		}
	}
	if p, err := lookPath(statusPlugin); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("confighash status needs %s, which is neither next to confighash nor on PATH: run `make build` (it builds bin/%s) or install it next to confighash", statusPlugin, statusPlugin)
}
