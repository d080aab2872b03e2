package testtools_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// TestRepoRoot finds the checkout from its packages and from a module of its
// own below it (examples/helm-sdk), whose go.mod is nearer.
func TestRepoRoot(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	root, err := filepath.Abs(filepath.Join(wd, "..", "..", ".."))
	require.NoError(t, err)
	tests := []struct {
		name string
		dir  string
	}{
		{"this package", wd},
		{"the root", root},
		{"a module of its own", filepath.Join(root, "examples", "helm-sdk")},
		{"a package of that module", filepath.Join(root, "examples", "helm-sdk", "helm3")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := os.Stat(tt.dir)
			require.NoError(t, err)
			t.Chdir(tt.dir)
			assert.Equal(t, root, testtools.RepoRoot(t))
		})
	}
}
