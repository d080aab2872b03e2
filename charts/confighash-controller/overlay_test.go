package chart_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// TestConfigOverlayNamespace installs config/ as shipped and the way a
// platform team puts it in a namespace of its own: an overlay with
// `namespace: platform` (or the namespace of the apps) and config/ as its
// resource, built by the real kustomize and by kubectl's kustomize, applied
// to a private API server. The controller then runs
// in-process with the applied Deployment's arguments as the ServiceAccount
// the overlay moved to platform, and an edit of a ConfigMap in another
// namespace must roll the Deployment that reads it. A ClusterRoleBinding
// whose subject names confighash-system keeps granting a ServiceAccount
// that no longer exists, and the controller is refused every list.
func TestConfigOverlayNamespace(t *testing.T) {
	kustomize := testtools.Tool(t, "kustomize")
	kubectl := testtools.Tool(t, "kubectl")
	root := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(root, "config"), os.DirFS(filepath.Join(testtools.RepoRoot(t), "config"))))
	for _, tc := range []struct {
		name, tool, ns string // ns: the overlay's namespace; empty: config/ as shipped
	}{
		{"kustomize build, as shipped", kustomize, ""},
		{"kustomize build, overlay", kustomize, "platform"},
		{"kubectl kustomize, overlay", kubectl, "platform"},
		{"kustomize build, overlay named like the app namespace", kustomize, "shop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const appNS = "shop"
			ns, dir := "confighash-system", filepath.Join(root, "config")
			if tc.ns != "" {
				ns, dir = tc.ns, filepath.Join(root, strings.NewReplacer(" ", "-", ",", "").Replace(tc.name))
				require.NoError(t, os.MkdirAll(dir, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"),
					[]byte("namespace: "+ns+"\nresources: [../config]\n"), 0o600))
			}
			verb := "build"
			if tc.tool == kubectl {
				verb = "kustomize"
			}
			res := testtools.Run(t, "", nil, nil, tc.tool, verb, dir)
			require.Equal(t, 0, res.ExitCode, res.Stderr)
			if tc.ns != "" {
				var names []string
				for _, line := range strings.Split(res.Stdout, "\n") {
					if strings.Contains(line, "namespace:") || strings.Contains(line, "name: confighash-system") {
						names = append(names, strings.TrimSpace(line))
					}
				}
				assert.NotContains(t, names, "namespace: confighash-system", "the overlay's namespace replaces confighash-system everywhere")
				assert.NotContains(t, names, "name: confighash-system", "the overlay's namespace replaces confighash-system everywhere")
			}

			cp := cptest.Private(t)
			admin := cp.RESTConfig()
			cs, dyn, mapper := kubetest.Clients(t, admin)
			ctx := t.Context()
			require.NoError(t, kubetest.Apply(ctx, dyn, mapper, strings.NewReader(res.Stdout), kubetest.ApplyOptions{FieldManager: "kubectl"}))
			if ns != appNS {
				_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNS}}, metav1.CreateOptions{})
				require.NoError(t, err)
			}

			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "confighash-controller", metav1.GetOptions{})
			require.NoError(t, err)
			_, err = cs.CoreV1().ServiceAccounts(ns).Get(ctx, d.Spec.Template.Spec.ServiceAccountName, metav1.GetOptions{})
			require.NoError(t, err, "the Deployment's ServiceAccount exists in %s", ns)
			// In the cluster the Lease goes to the pod's namespace; out of
			// it the flag says which.
			ctr := &d.Spec.Template.Spec.Containers[0]
			ctr.Args = append(ctr.Args, "--leader-election-namespace="+ns)
			cfg := rest.CopyConfig(admin)
			cfg.Impersonate = sa(ns, d.Spec.Template.Spec.ServiceAccountName)
			rollsAs(t, cs, cfg, d, appNS)
		})
	}
}
