package testtools

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Helm is a real helm binary, v3 or v4, with data, config and cache homes of
// its own: a test neither reads nor changes the user's, and Helm 3 never
// meets the plugins Helm 4 installs (it cannot load them).
type Helm struct {
	// Version is 3 or 4.
	Version int
	// Bin is the path of the binary.
	Bin string
	// Env holds the homes, for commands that run helm themselves.
	Env []string
}

// NewHelm returns bin/helm<version> with empty homes in a temporary folder;
// a missing binary skips the test (fails it in CI), as Tool does.
func NewHelm(t testing.TB, version int) Helm {
	t.Helper()
	return Helm{Version: version, Bin: Tool(t, fmt.Sprintf("helm%d", version)), Env: HelmHomes(t.TempDir())}
}

// HelmHomes returns the environment entries that put helm's data, config
// and cache homes, and its plugins (which HELM_PLUGINS in the user's
// environment would otherwise move), below dir.
func HelmHomes(dir string) []string {
	return []string{
		"HELM_DATA_HOME=" + filepath.Join(dir, "data"),
		"HELM_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"HELM_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"HELM_PLUGINS=" + filepath.Join(dir, "data", "plugins"),
	}
}

// String names the binary as the tests do: helm3 or helm4.
func (h Helm) String() string { return fmt.Sprintf("helm%d", h.Version) }

// Run runs helm with args, its homes and the extra environment entries env
// (later entries win); it fails the test only when helm cannot start.
func (h Helm) Run(t testing.TB, env []string, args ...string) Result {
	t.Helper()
	return Run(t, "", append(slices.Clone(h.Env), env...), nil, h.Bin, args...)
}

// MustRun runs helm with args and fails the test unless it exits 0; it
// returns what helm printed on standard output.
func (h Helm) MustRun(t testing.TB, args ...string) string {
	t.Helper()
	res := h.Run(t, nil, args...)
	if res.ExitCode != 0 {
		t.Fatalf("%s %s: exit %d\n%s%s", h, strings.Join(args, " "), res.ExitCode, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// InstallPlugin installs the Helm plugin in dir (postrenderer/plugin, say)
// into the homes, the way a user does, and fails the test unless helm
// succeeds.
func (h Helm) InstallPlugin(t testing.TB, dir string) {
	t.Helper()
	h.MustRun(t, "plugin", "install", dir)
}
