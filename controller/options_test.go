package controller_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/confighash/confighash/controller"
)

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
		setQPS    float64
		setBurst  int
		given     *rest.Config
		qps       float32
		burst     int
		throttled bool
	}{
		{name: "kubeconfig, defaults", qps: -1},
		{name: "kubeconfig, KubeAPIQPS", setQPS: 50, qps: 50, burst: 100, throttled: true},
		{name: "kubeconfig, qps and burst", setQPS: 50, setBurst: 60, qps: 50, burst: 60, throttled: true},
		{name: "kubeconfig, fractional qps", setQPS: 0.2, qps: 0.2, burst: 1, throttled: true},
		{name: "kubeconfig, negative qps", setQPS: -1, qps: -1},
		{name: "given config without a rate", given: given(0, 0), qps: -1},
		{name: "given config keeps its rate", given: given(200, 400), qps: 200, burst: 400, throttled: true},
		{name: "KubeAPIQPS overrides a given rate", setQPS: 7, given: given(200, 400), qps: 7, burst: 14, throttled: true},
		{name: "KubeAPIQPS turns a given rate off", setQPS: -1, given: given(200, 400), qps: -1, burst: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := controller.DefaultOptions()
			raw.Kubeconfig, raw.KubeAPIQPS, raw.KubeAPIBurst = kubeconfig, tc.setQPS, tc.setBurst
			o, err := raw.Complete()
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

// A kubeconfig YAML cannot read fails with an error naming the file, never
// the token or password YAML quoted (a value tagged !!int, an unquoted one
// that starts with "*").
func TestRESTConfigErrorHidesValues(t *testing.T) {
	for _, user := range []string{"token: !!int CANARY-t0ken", "token: *CANARY-t0ken", "password: !!float CANARY-t0ken\n    username: u"} {
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    "+user+"\n"), 0o600))
		_, err := controller.RESTConfig(controller.Options{Kubeconfig: kubeconfig})
		require.Error(t, err)
		assert.Contains(t, err.Error(), kubeconfig)
		assert.NotContains(t, err.Error(), "CANARY", user)
	}
}
