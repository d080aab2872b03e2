package cli

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFindPlugin: confighash status runs the kubectl-confighash next to
// its own executable, else the one on PATH, else fails saying how to get it.
func TestFindPlugin(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "confighash")
	require.NoError(t, os.WriteFile(self, []byte("#!/bin/sh\n"), 0o755))
	other := t.TempDir()
	notExec := filepath.Join(other, "confighash")
	require.NoError(t, os.WriteFile(filepath.Join(other, statusPlugin), []byte("x"), 0o644))
	onPath := func(string) (string, error) { return "/usr/local/bin/" + statusPlugin, nil }
	notOnPath := func(string) (string, error) { return "", errors.New("not found") }
	withPlugin := func() {
		require.NoError(t, os.WriteFile(filepath.Join(dir, statusPlugin), []byte("#!/bin/sh\n"), 0o755))
	}
	tests := []struct {
		name    string
		self    string
		setup   func()
		look    func(string) (string, error)
		want    string
		wantErr string
	}{
		{name: "on PATH only", self: self, look: onPath, want: "/usr/local/bin/" + statusPlugin},
		{name: "missing", self: self, look: notOnPath, wantErr: "run `make build`"},
		{name: "next to it, not executable", self: notExec, look: notOnPath, wantErr: "neither next to confighash nor on PATH"},
		{name: "next to it wins", self: self, setup: withPlugin, look: onPath, want: filepath.Join(dir, statusPlugin)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			got, err := findPlugin(func() (string, error) { return tc.self, nil }, tc.look)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
