package hmackey_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/hmackey"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	flagFile := write("flag", "from-flag\n")
	envFile := write("env", "\t from-env-file \r\n")
	empty := write("empty", " \n\t")
	nbsp := write("nbsp", "\u00a0key\u00a0\n")
	cwd, err := os.Getwd()
	require.NoError(t, err)
	tests := []struct {
		name string
		file string
		env  map[string]string
		want string
		err  string
	}{
		{"none: plain", "", nil, "", ""},
		{"the flag's file", flagFile, map[string]string{hmackey.EnvFile: envFile, hmackey.EnvKey: "k"}, "from-flag", ""},
		{"the variable's file", "", map[string]string{hmackey.EnvFile: envFile, hmackey.EnvKey: "k"}, "from-env-file", ""},
		{"the key itself", "", map[string]string{hmackey.EnvKey: " k3y\n"}, "k3y", ""},
		{"an empty variable: plain", "", map[string]string{hmackey.EnvKey: ""}, "", ""},
		{"white space only in the variable", "", map[string]string{hmackey.EnvKey: " \n"}, "", "holds only white space"},
		{"a non-breaking space is part of the key", nbsp, nil, "\u00a0key\u00a0", ""},
		{"an empty file", empty, nil, "", "is empty"},
		{"a missing file", filepath.Join(dir, "missing"), nil, "", "reading the HMAC key"},
		// kustomize runs an exec function in the kustomization's folder:
		// a relative path is looked for there, and the error says where.
		{"a missing relative file", "hmac.key", nil, "", "reading the HMAC key: open hmac.key: no such file or directory (a relative path, looked for in " + cwd + ")"},
		{"a missing file the variable names", "", map[string]string{hmackey.EnvFile: "hmac.key"}, "", "$CONFIGHASH_HMAC_KEY_FILE: reading the HMAC key: open hmac.key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := hmackey.Load(tt.file, func(k string) string { return tt.env[k] })
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(key))
		})
	}
}
