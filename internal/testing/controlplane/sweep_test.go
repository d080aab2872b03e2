package controlplane

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestSweepStale removes the directory of a dead owner and kills the
// component it left running, and keeps what a live owner (or none) holds.
func TestSweepStale(t *testing.T) {
	if !fileExists("/proc/self") {
		t.Skip("stale control planes are swept only where /proc exists")
	}
	t.Setenv("TMPDIR", t.TempDir())
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	dead := cmd.Process.Pid
	stale := makeOwnedDir(t, "stale", dead)
	live := makeOwnedDir(t, "live", os.Getppid())
	unowned := filepath.Join(os.TempDir(), tempDirPattern+"unowned")
	if err := os.Mkdir(unowned, 0o700); err != nil {
		t.Fatal(err)
	}
	// Stand-ins for components orphaned by the dead owner and for those of
	// the live owner: their command lines name a path in the directory, as
	// etcd's --data-dir and kube-apiserver's --cert-dir do.
	orphan := startNaming(t, stale)
	kept := startNaming(t, live)

	sweepStale()

	if fileExists(stale) {
		t.Errorf("%s (owner pid %d exited) was not removed", stale, dead)
	}
	for _, dir := range []string{live, unowned} {
		if !fileExists(dir) {
			t.Errorf("%s was removed, want kept", dir)
		}
	}
	select {
	case <-orphan:
	case <-time.After(10 * time.Second):
		t.Errorf("the process naming %s is still running, want it killed", stale)
	}
	select {
	case <-kept:
		t.Errorf("the process naming %s was killed, want it kept (its owner is alive)", live)
	default:
	}
}

// startNaming starts a process whose command line names a path in dir and
// returns a channel closed when it exits; the test kills it at the end.
func startNaming(t *testing.T, dir string) <-chan struct{} {
	t.Helper()
	cmd := exec.Command("sh", "-c", "while :; do sleep 1; done", filepath.Join(dir, "etcd"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sh: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	return exited
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
