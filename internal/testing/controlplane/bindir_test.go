package controlplane

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindBinaries checks where each binary is taken from: an explicit
// directory as is, else envtest's per-binary TEST_ASSET_<NAME>, else
// $CONFIGHASH_CONTROLPLANE_BIN, else $KUBEBUILDER_ASSETS.
func TestFindBinaries(t *testing.T) {
	all := fakeBinDir(t, EtcdBinary, APIServerBinary, ControllerManagerBinary)
	envtestOnly := fakeBinDir(t, EtcdBinary, APIServerBinary) // as setup-envtest installs
	ownKCM := filepath.Join(fakeBinDir(t, ControllerManagerBinary), ControllerManagerBinary)
	notExecutable := fakeBinDir(t, EtcdBinary, APIServerBinary, ControllerManagerBinary)
	if err := os.Chmod(filepath.Join(notExecutable, APIServerBinary), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		binDir      string
		env         map[string]string
		wantAPI     string // the kube-apiserver found
		wantKCM     string // the kube-controller-manager found
		wantMissing string // the path named by ErrBinariesMissing
	}{
		{
			name:    "project variable before envtest's",
			env:     map[string]string{BinDirEnv: all, AssetsEnv: envtestOnly},
			wantAPI: filepath.Join(all, APIServerBinary), wantKCM: filepath.Join(all, ControllerManagerBinary),
		},
		{
			name:        "setup-envtest alone has no kube-controller-manager",
			env:         map[string]string{AssetsEnv: envtestOnly},
			wantMissing: filepath.Join(envtestOnly, ControllerManagerBinary),
		},
		{
			name:    "setup-envtest and an own kube-controller-manager",
			env:     map[string]string{AssetsEnv: envtestOnly, "TEST_ASSET_KUBE_CONTROLLER_MANAGER": ownKCM},
			wantAPI: filepath.Join(envtestOnly, APIServerBinary), wantKCM: ownKCM,
		},
		{
			name:    "explicit directory ignores the variables",
			binDir:  all,
			env:     map[string]string{"TEST_ASSET_KUBE_CONTROLLER_MANAGER": ownKCM},
			wantAPI: filepath.Join(all, APIServerBinary), wantKCM: filepath.Join(all, ControllerManagerBinary),
		},
		{
			name:        "not executable",
			binDir:      notExecutable,
			wantMissing: filepath.Join(notExecutable, APIServerBinary),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, name := range []string{BinDirEnv, AssetsEnv, "TEST_ASSET_ETCD", "TEST_ASSET_KUBE_APISERVER", "TEST_ASSET_KUBE_CONTROLLER_MANAGER"} {
				t.Setenv(name, c.env[name])
			}
			got, err := findBinaries(c.binDir)
			if c.wantMissing != "" {
				if !errors.Is(err, ErrBinariesMissing) || !strings.Contains(err.Error(), c.wantMissing) {
					t.Fatalf("err = %v, want ErrBinariesMissing naming %s", err, c.wantMissing)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.apiServer != c.wantAPI || got.controllerManager != c.wantKCM {
				t.Fatalf("kube-apiserver %s, kube-controller-manager %s; want %s and %s",
					got.apiServer, got.controllerManager, c.wantAPI, c.wantKCM)
			}
		})
	}
}

// fakeBinDir returns a directory with an empty executable file per name.
func fakeBinDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
