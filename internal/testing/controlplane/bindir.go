package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// BinDirEnv names the environment variable that overrides the directory
// holding the etcd, kube-apiserver and kube-controller-manager binaries.
const BinDirEnv = "CONFIGHASH_CONTROLPLANE_BIN"

// Binary names expected in the binary directory.
const (
	EtcdBinary              = "etcd"
	APIServerBinary         = "kube-apiserver"
	ControllerManagerBinary = "kube-controller-manager"
)

// ErrBinariesMissing is returned (wrapped) when a control plane binary is
// not found; build them with hack/build-controlplane.sh.
var ErrBinariesMissing = errors.New("control plane binaries missing (run hack/build-controlplane.sh)")

// DefaultBinDir returns the directory the binaries are taken from when
// Options.BinDir is empty: $CONFIGHASH_CONTROLPLANE_BIN if set, otherwise the
// bin/ directory next to the nearest go.mod above the working directory
// (preferring one that already contains the binaries, so nested modules such
// as hack/controlplane resolve to the repository's bin/).
func DefaultBinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("controlplane: find bin dir: %w", err)
	}
	first := ""
	for dir := wd; ; dir = filepath.Dir(dir) {
		if fileExists(filepath.Join(dir, "go.mod")) {
			bin := filepath.Join(dir, "bin")
			if fileExists(filepath.Join(bin, APIServerBinary)) {
				return bin, nil
			}
			if first == "" {
				first = bin
			}
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	if first == "" {
		return "", fmt.Errorf("controlplane: no go.mod above %s and %s unset: %w", wd, BinDirEnv, ErrBinariesMissing)
	}
	return first, nil
}

// CheckBinaries reports whether dir holds all three control plane binaries.
// The error wraps ErrBinariesMissing when one is absent.
func CheckBinaries(dir string) error {
	for _, name := range []string{EtcdBinary, APIServerBinary, ControllerManagerBinary} {
		path := filepath.Join(dir, name)
		info, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("controlplane: %s: %w", path, ErrBinariesMissing)
		}
		if info.IsDir() || info.Mode()&0o111 == 0 {
			return fmt.Errorf("controlplane: %s is not an executable file: %w", path, ErrBinariesMissing)
		}
	}
	return nil
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
