package main_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExitCodes runs the built command: what it prints and its exit code
// when it stops before the controller starts (docs/controller.md, Flags).
func TestExitCodes(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "confighash-controller")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	tests := []struct {
		name       string
		args       []string
		env        []string
		code       int
		wantStdout []string
		wantStderr []string
	}{
		{name: "help", args: []string{"-h"}, code: 0, wantStdout: []string{"Usage: confighash-controller [flags]", "-hmac-key-file string"}},
		{name: "help, long", args: []string{"--help"}, code: 0, wantStdout: []string{"Usage: confighash-controller [flags]"}},
		{name: "stray argument", args: []string{"stray"}, code: 1, wantStderr: []string{"confighash-controller: unexpected arguments: stray\n"}},
		{name: "unknown flag", args: []string{"--no-such-flag"}, code: 1, wantStderr: []string{"Usage:", "confighash-controller: flag provided but not defined: -no-such-flag\n"}},
		{name: "bad log format", args: []string{"--log-format", "xml"}, code: 1, wantStderr: []string{`confighash-controller: --log-format "xml": want json or text`}},
		{name: "key file from the environment", env: []string{"CONFIGHASH_HMAC_KEY_FILE=/does/not/exist"}, code: 1,
			wantStderr: []string{"confighash-controller: ", "/does/not/exist"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = append(os.Environ(), tc.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.code, code, "exit code; stderr:\n%s", stderr.String())
			if len(tc.wantStdout) == 0 {
				assert.Empty(t, stdout.String())
			} else {
				assert.Empty(t, stderr.String())
			}
			for _, w := range tc.wantStdout {
				assert.Contains(t, stdout.String(), w)
			}
			for _, w := range tc.wantStderr {
				assert.Contains(t, stderr.String(), w)
			}
		})
	}
}
