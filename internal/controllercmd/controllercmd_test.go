package controllercmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// outside is a process outside a pod (no namespace file) whose run must
// end before it needs a context: these tests never reach the loggers.
func outside(t *testing.T, stderr *bytes.Buffer) process {
	return process{
		stderr:           stderr,
		getenv:           func(string) string { return "" },
		podNamespaceFile: filepath.Join(t.TempDir(), "namespace"),
		context: func() context.Context {
			t.Fatal("the process got as far as running the controller")
			return nil
		},
	}
}

// TestMainExits: the exit codes and messages of the command before the
// controller runs.
func TestMainExits(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{name: "help", args: []string{"-h"}, code: 0, want: []string{"Usage: confighash-controller [flags]", "-leader-elect"}},
		{name: "unknown flag", args: []string{"--no-such-flag"}, code: 1,
			want: []string{"flag provided but not defined: -no-such-flag", "Usage: confighash-controller", "confighash-controller: flag provided but not defined: -no-such-flag\n"}},
		{name: "stray argument", args: []string{"stray"}, code: 1, want: []string{"confighash-controller: unexpected arguments: stray\n"}},
		{name: "invalid value", args: []string{"--log-format", "xml"}, code: 1, want: []string{"confighash-controller: --log-format \"xml\": want json or text\n"}},
		// Outside a pod, leader election has no namespace to default to: the
		// error names the flag to pass, before anything connects.
		{name: "leader election outside a pod", args: []string{"--leader-elect", "--kubeconfig", "/does/not/exist"}, code: 1,
			want: []string{"confighash-controller: --leader-elect outside a cluster needs --leader-election-namespace (no pod namespace to put the Lease in)\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			assert.Equal(t, tc.code, outside(t, &stderr).main(tc.args))
			for _, w := range tc.want {
				assert.Contains(t, stderr.String(), w)
			}
			if tc.code == 0 {
				assert.NotContains(t, stderr.String(), "confighash-controller:")
			}
		})
	}
}

// TestCheckLeaseNamespace: the Lease namespace is given, or is the pod's
// when the pod's namespace file is there.
func TestCheckLeaseNamespace(t *testing.T) {
	inPod := filepath.Join(t.TempDir(), "namespace")
	require.NoError(t, os.WriteFile(inPod, []byte("ops"), 0o600))
	notInPod := filepath.Join(t.TempDir(), "namespace")
	tests := []struct {
		name    string
		args    []string
		file    string
		wantErr bool
	}{
		{name: "no leader election", file: notInPod},
		{name: "namespace given", args: []string{"--leader-elect", "--leader-election-namespace", "ops"}, file: notInPod},
		{name: "in a pod", args: []string{"--leader-elect"}, file: inPod},
		{name: "outside a pod", args: []string{"--leader-elect"}, file: notInPod, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseFlags(tc.args, &bytes.Buffer{}, func(string) string { return "" })
			require.NoError(t, err)
			err = checkLeaseNamespace(c.Options, tc.file)
			if !tc.wantErr {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "--leader-elect outside a cluster needs --leader-election-namespace"))
		})
	}
}
