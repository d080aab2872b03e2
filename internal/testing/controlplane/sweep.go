package controlplane

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	// tempDirPattern names control plane temporary directories.
	tempDirPattern = "confighash-controlplane-"
	// ownerFile in a temporary directory holds the pid of the process
	// that created it.
	ownerFile = "owner.pid"
)

// sweepStale cleans up after control planes whose owning process died
// without calling Stop (a test binary killed by -timeout, say): it kills
// the components still running from such a temporary directory (every
// process whose command line names a path in it) and removes the
// directory, which holds an etcd data directory of ~120 MB. Directories
// without an owner file, or whose owner is alive, are left alone. It needs
// /proc (Linux); elsewhere it does nothing. Best effort: errors are
// ignored.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPattern+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		killProcessesUsing(dir)
		_ = os.RemoveAll(dir)
	}
}

// processAlive reports whether a process with the given pid exists; true
// when that cannot be told (no /proc).
func processAlive(pid int) bool {
	if !fileExists("/proc/self") {
		return true
	}
	return fileExists(filepath.Join("/proc", strconv.Itoa(pid)))
}

// killProcessesUsing sends SIGKILL to every process whose command line
// names a path under dir.
func killProcessesUsing(dir string) {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		data, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(data, []byte(dir+string(filepath.Separator))) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err != nil {
			continue
		}
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
}

// writeOwner records the current process as the owner of dir.
func writeOwner(dir string) error {
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
}
