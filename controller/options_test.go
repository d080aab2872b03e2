package controller_test

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/confighash/confighash/controller"
)

func TestParseFlags(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(key, []byte("  s3cret\n"), 0o600))
	var out bytes.Buffer
	o, err := controller.ParseFlags([]string{
		"--kubeconfig", "/tmp/kc", "--leader-elect", "--leader-election-namespace", "ops",
		"--namespaces", "shop, billing,", "--dry-run", "--annotation-prefix", "example.com",
		"--coalesce-window", "500ms", "--min-roll-interval", "1m", "--hmac-key-file", key,
		"--metrics-bind-address", "0", "--argo-rollouts", "disabled",
	}, &out)
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
	assert.Empty(t, out.String())
}

func TestParseFlagsKeyFromEnvironment(t *testing.T) {
	t.Setenv("CONFIGHASH_HMAC_KEY", " from-env ")
	o, err := controller.ParseFlags(nil, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []byte("from-env"), o.Key)
	key := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(key, []byte("from-file\n"), 0o600))
	t.Setenv("CONFIGHASH_HMAC_KEY_FILE", key)
	o, err = controller.ParseFlags(nil, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []byte("from-file"), o.Key)
}

func TestParseFlagsDefaults(t *testing.T) {
	o, err := controller.ParseFlags(nil, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, controller.DefaultOptions().CoalesceWindow, o.CoalesceWindow)
	assert.Equal(t, "confighash.dev", o.AnnotationPrefix)
	assert.Nil(t, o.Namespaces)
	assert.False(t, o.DryRun)
}

func TestParseFlagsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--annotation-prefix", "Not A Prefix"},
		{"--coalesce-window", "-1s"},
		{"--argo-rollouts", "sometimes"},
		{"--log-format", "xml"},
		{"--leader-elect", "--leader-election-lease-duration", "1s", "--leader-election-renew-deadline", "2s"},
		{"--hmac-key-file", "/does/not/exist"},
		{"stray"},
	} {
		_, err := controller.ParseFlags(args, &bytes.Buffer{})
		require.Error(t, err, "%v", args)
	}
	var out bytes.Buffer
	_, err := controller.ParseFlags([]string{"-h"}, &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.Contains(t, out.String(), "-coalesce-window duration")
}

// Outside a pod, leader election has no namespace to default to: the error
// names the flag to pass.
func TestLeaderElectionNeedsNamespaceOutsideCluster(t *testing.T) {
	if _, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		t.Skip("running in a pod: the namespace defaults to the pod's")
	}
	opts := controller.DefaultOptions()
	opts.LeaderElect = true
	opts.RESTConfig = &rest.Config{Host: "https://127.0.0.1:1"}
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.Logger = controller.NewLogger(io.Discard, "text", "info") // leave the process-wide loggers alone
	_, _, err := controller.NewManager(opts)
	require.Error(t, err)
	// The check comes before anything connects: the address is never tried.
	assert.Equal(t, "--leader-elect outside a cluster needs --leader-election-namespace (no pod namespace to put the Lease in)", err.Error())
}

// The client-side rate limit: none unless asked for (the API server's
// Priority and Fairness paces the controller, as with controller-runtime's
// own config loading), so client-go's default of 5 requests per second
// never applies.
func TestRESTConfigRateLimit(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	given := func(qps float32, burst int) *rest.Config {
		return &rest.Config{Host: "https://127.0.0.1:1", QPS: qps, Burst: burst}
	}
	for _, tc := range []struct {
		name      string
		args      []string
		given     *rest.Config
		qps       float32
		burst     int
		throttled bool
	}{
		{name: "kubeconfig, defaults", qps: -1},
		{name: "kubeconfig, --kube-api-qps", args: []string{"--kube-api-qps", "50"}, qps: 50, burst: 100, throttled: true},
		{name: "kubeconfig, qps and burst", args: []string{"--kube-api-qps", "50", "--kube-api-burst", "60"}, qps: 50, burst: 60, throttled: true},
		{name: "kubeconfig, fractional qps", args: []string{"--kube-api-qps", "0.2"}, qps: 0.2, burst: 1, throttled: true},
		{name: "kubeconfig, negative qps", args: []string{"--kube-api-qps", "-1"}, qps: -1},
		{name: "given config without a rate", given: given(0, 0), qps: -1},
		{name: "given config keeps its rate", given: given(200, 400), qps: 200, burst: 400, throttled: true},
		{name: "flag overrides a given rate", args: []string{"--kube-api-qps", "7"}, given: given(200, 400), qps: 7, burst: 14, throttled: true},
		{name: "flag turns a given rate off", args: []string{"--kube-api-qps", "-1"}, given: given(200, 400), qps: -1, burst: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := controller.ParseFlags(append([]string{"--kubeconfig", kubeconfig}, tc.args...), &bytes.Buffer{})
			require.NoError(t, err)
			o.RESTConfig = tc.given
			cfg, err := controller.RESTConfig(o)
			require.NoError(t, err)
			assert.InDelta(t, tc.qps, cfg.QPS, 1e-6)
			assert.Equal(t, tc.burst, cfg.Burst)
			if tc.given != nil {
				assert.NotSame(t, tc.given, cfg, "the given config is copied, not changed")
			}
			// What client-go makes of it: a token bucket, or none at all.
			rc, err := rest.RESTClientFor(withCodec(cfg))
			require.NoError(t, err)
			assert.Equal(t, tc.throttled, rc.GetRateLimiter() != nil)
		})
	}
}

// withCodec completes a config for rest.RESTClientFor.
func withCodec(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	return c
}
