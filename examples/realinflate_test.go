package examples_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// inflateChart is a row of realCharts rendered through kustomize's
// helmCharts, which takes values files only: the row's args and changes
// written as values.
type inflateChart struct {
	// row names the realCharts row.
	row string
	// args are the row's args as a values file.
	args string
	// changes are the row's changes as values files, in the row's order.
	changes []string
	// namespaceless is a config the chart writes without a namespace, as
	// Kind/name: kustomize leaves it so, and without the functionConfig's
	// namespace confighash records it as external.
	namespaceless string
}

var inflateCharts = []inflateChart{
	{row: "alertmanager", changes: []string{"config:\n  global:\n    resolve_timeout: 10m\n"}},
	{row: "grafana", args: "adminPassword: not-random\n", namespaceless: "ConfigMap/web-grafana-env",
		changes: []string{"envRenderSecret:\n  GF_SECURITY_SECRET_KEY: second\n", "adminUser: root\n"}},
	{row: "ingress-nginx",
		changes: []string{"controller:\n  config:\n    use-gzip: \"false\"\n", "controller:\n  config:\n    proxy-body-size: 8m\n"}},
	{row: "argo-cd", changes: []string{"configs:\n  params:\n    server.insecure: \"true\"\n"}},
}

// The overlay's renames over the helmCharts base.
const inflatePrefix, inflateSuffix = "eu-", "-v2"

// inflateOverlay is a kustomization over the base that renames everything
// and sets a namespace, and lists confighash too, as docs/kustomize.md says.
// kustomize v5.8 applies no namespace: to the objects a chart rendered
// (kubernetes-sigs/kustomize#6093 and #6058): they keep the namespace the
// chart wrote, or none.
var inflateOverlay = fmt.Sprintf(`namePrefix: %s
nameSuffix: %s
namespace: prod
resources:
- ../base
transformers:
- confighash.yaml
`, inflatePrefix, inflateSuffix)

// TestRealInflate renders real charts through kustomize's helmCharts
// (kustomize build --enable-helm, as Argo CD does), with confighash listed
// under transformers:, with bin/helm3 and bin/helm4 as --helm-command, and
// checks that each hash and external list is the one helm template
// --post-renderer bin/confighash writes with the same values, namespace and
// release name, that kustomize's render is otherwise unchanged, and that
// verify passes; that without the functionConfig's namespace a config the
// chart writes in no namespace is external; then the same under an overlay
// that adds a namePrefix, a nameSuffix and a namespace, where a changed
// value moves exactly the hashes of the workloads that read it.
func TestRealInflate(t *testing.T) {
	t.Parallel()
	for _, ic := range inflateCharts {
		i := slices.IndexFunc(realCharts, func(r realChart) bool { return r.name == ic.row })
		require.GreaterOrEqual(t, i, 0, "no realCharts row %s", ic.row)
		tc := realCharts[i]
		require.Len(t, ic.changes, len(tc.changes), "%s: a values file for each change", tc.name)
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			chart := realChartCopy(t, tc)
			dir := t.TempDir()
			// The base's functionConfig names the release namespace, as
			// --post-renderer-args=--namespace does for Helm: grafana's
			// extraObjects ConfigMap names none. The overlay's names none:
			// kustomize leaves that ConfigMap's reference as written when
			// it renames it (the workload names shop), while confighash,
			// given namespace: shop, hashes the renamed ConfigMap.
			fc := testtools.ExecFunctionConfig(testtools.Tool(t, "confighash"))
			writeTree(t, dir, map[string]string{
				"base/kustomization.yaml": inflateBase(chart),
				"base/values.yaml":        tc.values,
				"base/args.yaml":          ic.args,
				"base/change.yaml":        "",
				"base/confighash.yaml":    fc + "namespace: " + realNamespace + "\n",
				"prod/kustomization.yaml": inflateOverlay,
				"prod/confighash.yaml":    fc,
			})
			require.NoError(t, testtools.CopyTree(filepath.Join(dir, "base"), filepath.Join(dir, "no-namespace"), nil))
			writeTree(t, dir, map[string]string{"no-namespace/confighash.yaml": fc})
			base, prod := filepath.Join(dir, "base"), filepath.Join(dir, "prod")
			h3 := realHelm(t, 3)
			on := append(slices.Clone(tc.args), "--values", filepath.Join(base, "values.yaml"))
			helmHashes := func(args ...string) (hashes, external map[string]string) {
				post := realTemplate(t, h3, chart, true, append(slices.Clone(on), args...)...)
				return namespaced(testtools.PodHashes(t, configsAndWorkloads(post))), namespaced(externals(t, post))
			}
			wantHashes, wantExternal := helmHashes()
			require.Equal(t, slices.Sorted(slices.Values(tc.hashedOn)), slices.Sorted(maps.Keys(wantHashes)), "helm3 --post-renderer: hashed workloads")

			for _, helm := range []string{"helm3", "helm4"} {
				t.Run("base, --helm-command "+helm, func(t *testing.T) {
					out := checkInflated(t, base, helm, realNamespace)
					assert.Equal(t, wantHashes, namespaced(testtools.PodHashes(t, configsAndWorkloads(out))), "hashes, against helm template --post-renderer")
					assert.Equal(t, wantExternal, namespaced(externals(t, out)), "external lists, against helm template --post-renderer")
				})
			}

			t.Run("base, functionConfig without namespace", func(t *testing.T) {
				out, _ := realBuild(t, filepath.Join(dir, "no-namespace"), inflateFlags(t, "helm3"), true)
				hashes, external := namespaced(testtools.PodHashes(t, configsAndWorkloads(out))), namespaced(externals(t, out))
				if ic.namespaceless == "" {
					assert.Equal(t, wantHashes, hashes, "every config and workload names its namespace: the same hashes")
					assert.Equal(t, wantExternal, external)
					return
				}
				assert.NotEqual(t, wantHashes, hashes, "%s is taken to be in no namespace", ic.namespaceless)
				assert.Contains(t, slices.Collect(maps.Values(external)), ic.namespaceless)
			})

			prodHashes := testtools.PodHashes(t, configsAndWorkloads(checkInflated(t, prod, "helm3", "")))
			// The overlay's confighash given the chart's namespace: a config
			// the chart writes with none keeps its old name in the references
			// of a workload that names one (kustomize fixes references within
			// one namespace, none meaning "default"), so it is external there.
			t.Run("overlay, functionConfig namespace", func(t *testing.T) {
				writeTree(t, dir, map[string]string{"prod-ns/kustomization.yaml": inflateOverlay, "prod-ns/confighash.yaml": fc + "namespace: " + realNamespace + "\n"})
				checkInflated(t, filepath.Join(dir, "prod-ns"), "helm3", realNamespace)
			})
			assert.Equal(t, slices.Sorted(slices.Values(overlayIDs(tc.hashedOn))), slices.Sorted(maps.Keys(prodHashes)), "overlay: hashed workloads")

			for k, c := range tc.changes {
				t.Run("change "+strings.Join(c.args[1:], " "), func(t *testing.T) {
					require.NoError(t, os.WriteFile(filepath.Join(base, "change.yaml"), []byte(ic.changes[k]), 0o644))
					defer func() { require.NoError(t, os.WriteFile(filepath.Join(base, "change.yaml"), nil, 0o644)) }()
					wantChanged, _ := helmHashes(c.args...)
					changed, _ := realBuild(t, base, inflateFlags(t, "helm3"), true)
					assert.Equal(t, wantChanged, namespaced(testtools.PodHashes(t, configsAndWorkloads(changed))), "base: hashes, against helm template --post-renderer")
					changed, _ = realBuild(t, prod, inflateFlags(t, "helm3"), true)
					assertMoved(t, "overlay", prodHashes, testtools.PodHashes(t, configsAndWorkloads(changed)), overlayIDs(c.moved))
				})
			}
		})
	}
}

// inflateBase is the base kustomization: the chart through helmCharts, with
// the release name, namespace and Kubernetes version of realTemplate, and
// confighash under transformers:.
func inflateBase(chart string) string {
	return fmt.Sprintf(`helmGlobals:
  chartHome: %s
helmCharts:
- name: %s
  releaseName: web
  namespace: %s
  kubeVersion: %s
  valuesFile: values.yaml
  additionalValuesFiles: [args.yaml, change.yaml]
transformers:
- confighash.yaml
`, filepath.Dir(chart), filepath.Base(chart), realNamespace, realKubeVersion)
}

// inflateFlags are the kustomize build flags that inflate helmCharts with
// bin/<helm>.
func inflateFlags(t *testing.T, helm string) []string {
	t.Helper()
	return []string{"--enable-helm", "--helm-command", testtools.Tool(t, helm)}
}

// checkInflated builds the kustomization in dir with and without exec
// functions, checks that confighash added its annotations and changed
// nothing else, that verify passes and that every hash and external list
// is the one computed from the final objects alone, those that name no
// namespace in ns (the functionConfig's), and returns the render.
func checkInflated(t *testing.T, dir, helm, ns string) string {
	t.Helper()
	plain, _ := realBuild(t, dir, inflateFlags(t, helm), false)
	require.NotContains(t, plain, "confighash.dev/")
	out, _ := realBuild(t, dir, inflateFlags(t, helm), true)
	assert.Equal(t, treeObjects(t, plain), treeObjects(t, out), "the objects differ from kustomize's render without confighash in more than its annotations")
	verify := testtools.Run(t, "", nil, []byte(out), testtools.Tool(t, "confighash"), "verify", "--namespace", ns)
	assert.Zero(t, verify.ExitCode, "confighash verify on the render\n%s", verify.Stderr)
	assertIndependent(t, filepath.Base(dir), inNamespace(t, configsAndWorkloads(out), ns))
	return out
}

// inNamespace puts the objects of stream that name no namespace in ns.
func inNamespace(t *testing.T, stream, ns string) string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(stream))
	require.NoError(t, err)
	for _, n := range nodes {
		if n.GetNamespace() == "" {
			require.NoError(t, n.SetNamespace(ns))
		}
	}
	s, err := kio.StringAll(nodes)
	require.NoError(t, err)
	return s
}

// overlayID is a Kind/namespace/name of the base as the overlay renames it,
// in the namespace the chart wrote.
func overlayID(id string) string {
	kind, rest, _ := strings.Cut(id, "/")
	ns, name, _ := strings.Cut(rest, "/")
	return kind + "/" + ns + "/" + inflatePrefix + name + inflateSuffix
}

// overlayIDs is overlayID of each id.
func overlayIDs(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, overlayID(id))
	}
	return out
}

// writeTree writes files (paths relative to dir), creating their folders.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
}
