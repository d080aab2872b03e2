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

// TestStream joins files as one install: each after a "---" line, each
// ending in a newline so that the next "---" starts a line.
func TestStream(t *testing.T) {
	for want, files := range map[string][]testtools.CorpusFile{
		"":                            nil,
		"---\na: 1\n---\nb: 2\n":      {{Name: "a.yaml", Data: []byte("a: 1\n")}, {Name: "b.yaml", Data: []byte("b: 2\n")}},
		"---\na: 1\n---\nb: 2\n---\n": {{Data: []byte("a: 1")}, {Data: []byte("b: 2\n")}, {Data: nil}},
	} {
		assert.Equal(t, want, string(testtools.Stream(files)))
	}
}

// TestReadCorpusFolder reads a folder's manifests in name order, and only
// them; a folder without any is an error.
func TestReadCorpusFolder(t *testing.T) {
	corpus := t.TempDir()
	dir := filepath.Join(corpus, "stack")
	require.NoError(t, os.Mkdir(dir, 0o755))
	for name, text := range map[string]string{"b.yaml": "b: 2\n", "a.yaml": "a: 1\n", "notes.txt": "x"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600))
	}
	files, err := testtools.ReadCorpusFolder(corpus, "stack")
	require.NoError(t, err)
	assert.Equal(t, []testtools.CorpusFile{{Name: "a.yaml", Data: []byte("a: 1\n")}, {Name: "b.yaml", Data: []byte("b: 2\n")}}, files)
	_, err = testtools.ReadCorpusFolder(corpus, "missing")
	require.ErrorContains(t, err, "no manifests in the corpus folder missing")
}
