package postrenderer_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/postrenderer"
)

// TestRenderWritesWhatRunReturns holds Render, which writes the output from
// the input's unedited runs and the edited documents, to Run, which builds
// it in one buffer, over every golden input; a failing stream writes nothing.
func TestRenderWritesWhatRunReturns(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*/input.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	// And one stream that fails in its last document, after documents that
	// would be written unedited.
	bad := filepath.Join(t.TempDir(), "input.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\n"+
		"apiVersion: v1\nkind: Secret\nmetadata: {name: b}\ndata: {token: \"not base64!\"}\n"), 0o600))
	inputs = append(inputs, bad)
	pr, err := postrenderer.New(postrenderer.Options{Namespace: "default"})
	require.NoError(t, err)
	for _, in := range inputs {
		t.Run(filepath.Base(filepath.Dir(in)), func(t *testing.T) {
			input, err := os.ReadFile(in)
			require.NoError(t, err)
			want, runErr := pr.Run(bytes.NewBuffer(bytes.Clone(input)))
			var got bytes.Buffer
			renderErr := pr.Render(input, &got)
			if runErr != nil {
				require.Error(t, renderErr)
				assert.Equal(t, runErr.Error(), renderErr.Error())
				assert.Zero(t, got.Len(), "a failing stream writes nothing")
				return
			}
			require.NoError(t, renderErr)
			assert.Equal(t, want.String(), got.String())
		})
	}
}
