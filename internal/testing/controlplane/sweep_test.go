package controlplane

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

func TestSweepStale(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("stale directories are not swept on Windows")
	}
	t.Setenv("TMPDIR", t.TempDir())
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	dead := cmd.Process.Pid
	stale := makeOwnedDir(t, "stale", dead)
	live := makeOwnedDir(t, "live", os.Getppid())
	unowned := filepath.Join(os.TempDir(), tempDirPattern+"unowned")
	if err := os.Mkdir(unowned, 0o700); err != nil {
		t.Fatal(err)
	}

	sweepStale()

	if fileExists(stale) {
		t.Errorf("%s (owner pid %d exited) was not removed", stale, dead)
	}
	for _, dir := range []string{live, unowned} {
		if !fileExists(dir) {
			t.Errorf("%s was removed, want kept", dir)
		}
	}
}

// makeOwnedDir creates a control plane temp dir owned by pid.
func makeOwnedDir(t *testing.T, name string, pid int) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), tempDirPattern+name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
