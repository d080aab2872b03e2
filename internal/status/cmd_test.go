package status_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/status"
)

// TestMainUsage: help asked for is printed on standard output with exit 0;
// a command, flag or argument the plugin does not take, or a kubeconfig it
// cannot load, is an error on standard error naming it, with nothing on
// standard output and exit 1. None of these needs a cluster.
func TestMainUsage(t *testing.T) {
	dir := t.TempDir()
	notYAML := filepath.Join(dir, "not-yaml")
	require.NoError(t, os.WriteFile(notYAML, []byte("\x00\x01 not a kubeconfig"), 0o600))
	for _, tc := range []struct {
		args []string
		code int
		out  string // on stdout; empty: stdout must be empty
		err  string // on stderr; empty: stderr must be empty
	}{
		{args: []string{"--help"}, out: "kubectl confighash status [-n NAMESPACE | -A] [--json | -o json]"},
		{args: []string{"-h"}, out: "-request-timeout"},
		{args: []string{"status", "--help"}, out: "-all-namespaces"},
		{args: []string{"help"}, out: "kubectl confighash status [-n NAMESPACE | -A] [--json | -o json]"},
		{args: []string{"stats"}, code: 1, err: `unknown command "stats"`},
		{args: []string{"status", "--bogus"}, code: 1, err: "flag provided but not defined: -bogus"},
		{args: []string{"status", "-n"}, code: 1, err: "flag needs an argument: -n"},
		{args: []string{"status", "shop"}, code: 1, err: `unexpected argument "shop"`},
		{args: []string{"status", "--request-timeout", "soon"}, code: 1, err: "-request-timeout"},
		{args: []string{"status", "--kubeconfig", filepath.Join(dir, "missing")}, code: 1, err: filepath.Join(dir, "missing")},
		{args: []string{"status", "--kubeconfig", notYAML}, code: 1, err: notYAML},
		{args: []string{"status", "--kubeconfig", dir}, code: 1, err: dir},
		{args: []string{"status", "--hmac-key-file", filepath.Join(dir, "no-key")}, code: 1, err: filepath.Join(dir, "no-key")},
		// kubectl's -o: json is --json, the table is the default; the
		// kubeconfig's error shows the flag was taken.
		{args: []string{"status", "-o", "json", "--kubeconfig", filepath.Join(dir, "missing")}, code: 1, err: filepath.Join(dir, "missing")},
		{args: []string{"status", "--output=wide", "--kubeconfig", filepath.Join(dir, "missing")}, code: 1, err: filepath.Join(dir, "missing")},
		{args: []string{"status", "-o", "yaml"}, code: 1, err: `output format "yaml": status prints a table, or JSON with -o json`},
		{args: []string{"status", "-o", "wide", "--json"}, code: 1, err: "-o wide and --json exclude each other"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := status.Main(tc.args, &out, &errb, func(string) string { return "" })
			assert.Equal(t, tc.code, code, errb.String())
			if tc.out == "" {
				assert.Empty(t, out.String())
			} else {
				assert.Contains(t, out.String(), "Usage:")
				assert.Contains(t, out.String(), tc.out)
			}
			if tc.err == "" {
				assert.Empty(t, errb.String())
			} else {
				assert.Contains(t, errb.String(), tc.err)
			}
		})
	}
}
