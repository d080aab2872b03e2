package controllercmd_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/controllercmd"
)

// env is an environment of the given variables only.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

var noEnv = env(nil)

func TestParseFlags(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(key, []byte("  s3cret\n"), 0o600))
	var out bytes.Buffer
	o, err := controllercmd.ParseFlags([]string{
		"--kubeconfig", "/tmp/kc", "--leader-elect", "--leader-election-namespace", "ops",
		"--namespaces", "shop, billing,", "--dry-run", "--annotation-prefix", "example.com",
		"--coalesce-window", "500ms", "--min-roll-interval", "1m", "--hmac-key-file", key,
		"--metrics-bind-address", "0", "--pprof-bind-address", "127.0.0.1:6060", "--argo-rollouts", "disabled",
		"--kube-api-qps", "50", "--concurrency", "8", "--log-format", "text", "--log-level", "debug",
	}, &out, noEnv)
	require.NoError(t, err)
	assert.Equal(t, "/tmp/kc", o.Kubeconfig)
	assert.True(t, o.LeaderElect)
	assert.Equal(t, "ops", o.LeaderElectionNamespace)
	assert.Equal(t, controller.DefaultLeaderElectionID, o.LeaderElectionID)
	assert.Equal(t, []string{"shop", "billing"}, o.Namespaces)
	assert.True(t, o.DryRun)
	assert.Equal(t, "example.com", o.AnnotationPrefix)
	assert.Equal(t, 500*time.Millisecond, o.CoalesceWindow)
	assert.Equal(t, time.Minute, o.MinRollInterval)
	assert.Equal(t, []byte("s3cret"), o.Key, "trimmed like bin/confighash --hmac-key-file")
	assert.Equal(t, "0", o.MetricsBindAddress)
	assert.Equal(t, controller.DefaultHealthAddress, o.HealthProbeBindAddress)
	assert.Equal(t, "127.0.0.1:6060", o.PprofBindAddress)
	assert.Equal(t, controller.ArgoRolloutsDisabled, o.ArgoRollouts)
	assert.InDelta(t, 50.0, o.KubeAPIQPS, 0)
	assert.Equal(t, 100, o.KubeAPIBurst, "completed: twice the rate")
	assert.Equal(t, 8, o.Concurrency)
	assert.Equal(t, "text", o.LogFormat)
	assert.Equal(t, "debug", o.LogLevel)
	assert.Empty(t, out.String())
}

func TestParseFlagsKeyFromEnvironment(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(key, []byte("from-file\n"), 0o600))
	flagKey := filepath.Join(t.TempDir(), "flag-key")
	require.NoError(t, os.WriteFile(flagKey, []byte("from-flag\n"), 0o600))
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []byte
	}{
		{name: "none"},
		{name: "the key itself", env: map[string]string{"CONFIGHASH_HMAC_KEY": " from-env "}, want: []byte("from-env")},
		{name: "a file before the key itself", env: map[string]string{"CONFIGHASH_HMAC_KEY": "from-env", "CONFIGHASH_HMAC_KEY_FILE": key}, want: []byte("from-file")},
		{name: "the flag before both", args: []string{"--hmac-key-file", flagKey},
			env: map[string]string{"CONFIGHASH_HMAC_KEY": "from-env", "CONFIGHASH_HMAC_KEY_FILE": key}, want: []byte("from-flag")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := controllercmd.ParseFlags(tc.args, &bytes.Buffer{}, env(tc.env))
			require.NoError(t, err)
			assert.Equal(t, tc.want, o.Key)
		})
	}
}

func TestParseFlagsDefaults(t *testing.T) {
	o, err := controllercmd.ParseFlags(nil, &bytes.Buffer{}, noEnv)
	require.NoError(t, err)
	d := controller.DefaultOptions()
	assert.Equal(t, d.CoalesceWindow, o.CoalesceWindow)
	assert.Equal(t, d.MinRollInterval, o.MinRollInterval)
	assert.Equal(t, d.MetricsBindAddress, o.MetricsBindAddress)
	assert.Equal(t, d.HealthProbeBindAddress, o.HealthProbeBindAddress)
	assert.Empty(t, o.PprofBindAddress, "profiles are served only when asked for")
	assert.Equal(t, d.Concurrency, o.Concurrency)
	assert.Equal(t, "confighash.dev", o.AnnotationPrefix)
	assert.Equal(t, "json", o.LogFormat)
	assert.Equal(t, "info", o.LogLevel)
	assert.Nil(t, o.Namespaces)
	assert.False(t, o.DryRun)
	assert.Empty(t, o.Key)
	assert.Zero(t, o.Logger, "the logger is the program's to set")
}

func TestParseFlagsErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--annotation-prefix", "Not A Prefix"}, "--annotation-prefix"},
		{[]string{"--coalesce-window", "-1s"}, "--coalesce-window and --min-roll-interval must not be negative"},
		{[]string{"--argo-rollouts", "sometimes"}, `--argo-rollouts "sometimes": want auto, enabled or disabled`},
		{[]string{"--log-format", "xml"}, `--log-format "xml": want json or text`},
		{[]string{"--log-level", "trace"}, `--log-level "trace": want info or debug`},
		{[]string{"--leader-elect", "--leader-election-lease-duration", "1s", "--leader-election-renew-deadline", "2s"},
			"leader election wants lease duration > renew deadline > retry period > 0"},
		{[]string{"--namespaces", "a/b"}, `--namespaces: "a/b" is not a namespace name`},
		{[]string{"--hmac-key-file", "/does/not/exist"}, "/does/not/exist"},
		{[]string{"--concurrency", "many"}, `invalid value "many" for flag -concurrency`},
		{[]string{"stray"}, "unexpected arguments: stray"},
	}
	for _, tc := range tests {
		_, err := controllercmd.ParseFlags(tc.args, &bytes.Buffer{}, noEnv)
		require.Error(t, err, "%v", tc.args)
		assert.Contains(t, err.Error(), tc.want, "%v", tc.args)
	}
	var out bytes.Buffer
	_, err := controllercmd.ParseFlags([]string{"-h"}, &out, noEnv)
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.Contains(t, out.String(), "Usage: confighash-controller [flags]")
	assert.Contains(t, out.String(), "-coalesce-window duration")
}
