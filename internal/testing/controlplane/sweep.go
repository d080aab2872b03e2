package controlplane

import (
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

// sweepStale removes temporary directories left behind by control planes
// whose owning process died without calling Stop (for example a test binary
// killed by -timeout). Each holds an etcd data directory of ~120 MB. On
// Linux the component processes themselves were already killed through
// Pdeathsig. Directories without an owner file, or whose owner is alive,
// are left alone. Errors are ignored: sweeping is best effort.
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
		_ = os.RemoveAll(dir)
	}
}

// writeOwner records the current process as the owner of dir.
func writeOwner(dir string) error {
	_, err := writeFile(dir, ownerFile, []byte(strconv.Itoa(os.Getpid())+"\n"))
	return err
}
