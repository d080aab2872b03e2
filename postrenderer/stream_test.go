package postrenderer_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/postrenderer"
)

var update = flag.Bool("update", false, "rewrite the expected.yaml golden files")

// TestGolden runs every testdata/<case>/input.yaml through the stream mode
// and compares with expected.yaml; -update rewrites the expectations. Each
// output must also be a fixed point.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*/input.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, in := range dirs {
		dir := filepath.Dir(in)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			input, err := os.ReadFile(in)
			require.NoError(t, err)
			out, _, err := postrenderer.Process(input, inject.Options{})
			require.NoError(t, err)
			want := filepath.Join(dir, "expected.yaml")
			if *update {
				require.NoError(t, os.WriteFile(want, out, 0o644))
			}
			expected, err := os.ReadFile(want)
			require.NoError(t, err)
			assert.Equal(t, string(expected), string(out))
			assertSecondRunSame(t, out, inject.Options{})
		})
	}
}
