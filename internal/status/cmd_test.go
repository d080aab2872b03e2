package status_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// TestRequestTimeoutIsPerRequest: --request-timeout bounds each request,
// as kubectl's does, not the whole report, which takes about five requests a
// workload, one after the other: a namespace of thousands of workloads, or
// -A on a large cluster, outlasts any bound on the whole. Here an API
// server answers each request in 0.6 s and status is given 2 s (1.4 s to
// spare per request on a loaded machine): before, the fourth request ran
// out of time and status printed only "context deadline exceeded".
func TestRequestTimeoutIsPerRequest(t *testing.T) {
	lists := map[string]string{
		"/apis/apps/v1/namespaces/shop/deployments":  `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[]}`,
		"/apis/apps/v1/namespaces/shop/statefulsets": `{"kind":"StatefulSetList","apiVersion":"apps/v1","metadata":{},"items":[]}`,
		"/apis/apps/v1/namespaces/shop/daemonsets":   `{"kind":"DaemonSetList","apiVersion":"apps/v1","metadata":{},"items":[]}`,
		"/apis/batch/v1/namespaces/shop/cronjobs":    `{"kind":"CronJobList","apiVersion":"batch/v1","metadata":{},"items":[]}`,
	}
	var requests atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		time.Sleep(600 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		if body, ok := lists[r.URL.Path]; ok {
			_, _ = w.Write([]byte(body))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer server.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "+server.URL+"}}]\n"+
		"users: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"), 0o600))

	var out, errb bytes.Buffer
	code := status.Main([]string{"status", "--kubeconfig", kubeconfig, "-n", "shop", "--request-timeout", "2s"}, &out, &errb, func(string) string { return "" })
	assert.Equal(t, 0, code, errb.String())
	assert.Equal(t, "no workload managed by confighash in namespace shop\n", out.String())
	assert.GreaterOrEqual(t, requests.Load(), int32(5), "more requests than fit in the timeout one after the other")
}
