package testtools_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

func TestModuleDir(t *testing.T) {
	// A module the main module already requires: in the cache after any
	// build, so this needs no network once the checkout has built.
	dir := testtools.ModuleDir(t, "sigs.k8s.io/yaml@v1.6.0")
	_, err := os.Stat(filepath.Join(dir, "yaml.go"))
	require.NoError(t, err)
}
