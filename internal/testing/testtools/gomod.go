package testtools

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// ModuleDir returns the folder of a Go module version (path@version, like
// sigs.k8s.io/metrics-server@v0.9.0) in the module cache, downloading it
// through the Go module proxy when it is not there yet. Many projects ship
// their Helm charts and kustomize trees inside their Go module, so the
// proxy (the one network service a build machine reaches) serves real
// inputs, verified against the checksum database, that nobody wrote for
// confighash. The folder is read-only: copy what a test must change. A
// download that fails skips the test with a message, and fails it in CI.
func ModuleDir(t testing.TB, module string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", module)
	// Outside any module, so the checkout's go.mod is neither read nor changed.
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GO111MODULE=on")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	var res struct{ Dir, Error string }
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Dir == "" {
		msg := res.Error
		if msg == "" {
			msg = errb.String()
		}
		if runErr != nil && msg == "" {
			msg = runErr.Error()
		}
		missing(t, "go mod download "+module+": "+msg)
	}
	return res.Dir
}
