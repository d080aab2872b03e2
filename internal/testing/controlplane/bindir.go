package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables naming where the binaries are.
const (
	// BinDirEnv names this project's override of the directory holding
	// etcd, kube-apiserver and kube-controller-manager.
	BinDirEnv = "CONFIGHASH_CONTROLPLANE_BIN"
	// AssetsEnv is envtest's directory variable, as printed by
	// `setup-envtest use <version> -p path`; used when BinDirEnv is unset.
	AssetsEnv = "KUBEBUILDER_ASSETS"
	// assetEnvPrefix starts envtest's per-binary override variables,
	// e.g. TEST_ASSET_KUBE_CONTROLLER_MANAGER.
	assetEnvPrefix = "TEST_ASSET_"
)

// Binary names expected in the binary directory.
const (
	EtcdBinary              = "etcd"
	APIServerBinary         = "kube-apiserver"
	ControllerManagerBinary = "kube-controller-manager"
)

// ErrBinariesMissing is returned (wrapped) when a control plane binary is
// not found.
var ErrBinariesMissing = errors.New("control plane binaries missing (run `make controlplane`, or see the package doc for setup-envtest)")

// DefaultBinDir returns the directory the binaries are taken from when
// Options.BinDir is empty: $CONFIGHASH_CONTROLPLANE_BIN if set, else
// $KUBEBUILDER_ASSETS if set, otherwise the bin/ directory next to the
// nearest go.mod above the working directory (preferring one that already
// contains the binaries, so nested modules such as hack/controlplane
// resolve to the repository's bin/).
func DefaultBinDir() (string, error) {
	for _, env := range []string{BinDirEnv, AssetsEnv} {
		if dir := os.Getenv(env); dir != "" {
			return dir, nil
		}
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
		return "", fmt.Errorf("controlplane: no go.mod above %s and neither %s nor %s set: %w", wd, BinDirEnv, AssetsEnv, ErrBinariesMissing)
	}
	return first, nil
}

// binaries are the paths of the three component binaries.
type binaries struct {
	etcd, apiServer, controllerManager string
}

// findBinaries resolves and checks the binaries. A non-empty binDir is
// used as is; otherwise each binary is envtest's TEST_ASSET_<NAME> when
// set (TEST_ASSET_KUBE_CONTROLLER_MANAGER, say), else DefaultBinDir()/name.
func findBinaries(binDir string) (binaries, error) {
	explicit := binDir != ""
	if !explicit {
		dir, err := DefaultBinDir()
		if err != nil {
			return binaries{}, err
		}
		binDir = dir
	}
	path := func(name string) string {
		if p := os.Getenv(assetEnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))); p != "" && !explicit {
			return p
		}
		return filepath.Join(binDir, name)
	}
	b := binaries{path(EtcdBinary), path(APIServerBinary), path(ControllerManagerBinary)}
	for _, p := range []string{b.etcd, b.apiServer, b.controllerManager} {
		info, err := os.Stat(p)
		if err != nil {
			return b, fmt.Errorf("controlplane: %s: %w", p, ErrBinariesMissing)
		}
		if info.IsDir() || info.Mode()&0o111 == 0 {
			return b, fmt.Errorf("controlplane: %s is not an executable file: %w", p, ErrBinariesMissing)
		}
	}
	return b, nil
}

// CheckBinaries reports whether etcd, kube-apiserver and
// kube-controller-manager are found for binDir ("" applies the default
// rule of Options.BinDir). The error wraps ErrBinariesMissing.
func CheckBinaries(binDir string) error {
	_, err := findBinaries(binDir)
	return err
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
