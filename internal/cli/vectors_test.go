package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/internal/testing/vectors"
)

// TestVectorsThroughTheBinary renders every shared vector with the command,
// its HMAC key given as a key file holding the vector's key byte for byte
// (white space included), in stream and KRM mode.
func TestVectorsThroughTheBinary(t *testing.T) {
	value := regexp.MustCompile(`confighash\.dev/hash"?: ?["']?(v1-[a-z0-9-]+:[0-9a-f]{64})`)
	vectors.Each(t, func(t *testing.T, v vectors.Vector) {
		input, err := v.Render()
		require.NoError(t, err)
		want, _ := v.RenderExpected()
		args := []string{"--namespace", v.Namespace, "--quiet"}
		if v.Key != "" {
			file := filepath.Join(t.TempDir(), "key")
			require.NoError(t, os.WriteFile(file, []byte(v.Key), 0o600))
			args = append(args, "--hmac-key-file", file)
		}
		for mode, in := range map[string]string{"stream": input, "KRM": testtools.ResourceList(input, "")} {
			code, out, errOut := run(t, in, args...)
			require.Equal(t, 0, code, errOut)
			m := value.FindStringSubmatch(out)
			require.NotNil(t, m, out)
			assert.Equal(t, want, m[1], mode)
		}
	})
}

// TestRejectedVectorsThroughTheBinary: input that breaks a rule of the
// content normalisation is refused in stream and KRM mode, with the message
// the vector names, exit 1 and nothing written.
func TestRejectedVectorsThroughTheBinary(t *testing.T) {
	vs, err := vectors.LoadRejected()
	require.NoError(t, err)
	require.NotEmpty(t, vs)
	const consumer = `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"}, "spec": {"template": {"spec": {"containers": [{"name": "a", "envFrom": [{"configMapRef": {"name": "app"}}, {"secretRef": {"name": "token"}}, {"secretRef": {"name": "creds"}}]}]}}}}`
	for _, v := range vs {
		t.Run(v.File, func(t *testing.T) {
			input := v.Manifest + "\n---\n" + consumer + "\n"
			for mode, in := range map[string]string{"stream": input, "KRM": testtools.ResourceList(input, "")} {
				code, out, errOut := run(t, in, "--quiet")
				assert.Equal(t, 1, code, "%s: exit code", mode)
				assert.Contains(t, errOut, v.Error, mode)
				assert.Empty(t, out, "%s: nothing is written", mode)
			}
		})
	}
}
