package examples_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// Go modules that ship kustomize trees, pinned to versions the module proxy
// serves and that GOTOOLCHAIN=local can download.
const (
	kueueModule    = "sigs.k8s.io/kueue@v0.10.0"
	capiOld        = "sigs.k8s.io/cluster-api@v1.0.0"
	capiNew        = "sigs.k8s.io/cluster-api@v1.9.0"
	metricsServer  = "sigs.k8s.io/metrics-server@v0.7.2"
	katibModule    = "github.com/kubeflow/katib@v0.19.0"
	fluxModule     = "github.com/fluxcd/flux2/v2@v2.3.0"
	rolloutsModule = "github.com/argoproj/argo-rollouts@v1.7.2"
	argoCDModule   = "github.com/argoproj/argo-cd/v2@v2.13.3"
)

// treeChange edits a file of the copied tree (path relative to the row's
// root) and names the workloads whose hash it moves.
type treeChange struct {
	file, old, new string
	moved          []string
}

// realTree is one row: a kustomization inside a module version.
type realTree struct {
	name, module string
	// root is the folder copied out of the module (every file the build
	// reads is below it), build the kustomization inside root.
	root, build string
	// overlay are files written into the copy (path relative to root),
	// an overlay of ours over the tree as shipped.
	overlay map[string]string
	// flags are more kustomize build flags.
	flags []string
	// workloads are every workload of the render (Kind/namespace/name)
	// and the external list it carries ("" when it reads nothing from
	// outside the render); hashed are those that get a hash.
	workloads map[string]string
	hashed    []string
	// changes edit a generator's (or a patched config's) input.
	changes []treeChange
}

var realTrees = []realTree{
	{
		// namespace, namePrefix, labels with includeTemplates, a
		// configMapGenerator without suffix that the manager mounts,
		// strategic merge patches, a transformer config of the tree, the
		// webhook cert Secret of the tree.
		name: "kueue config/default", module: kueueModule, root: "config", build: "default",
		workloads: map[string]string{"Deployment/kueue-system/kueue-controller-manager": ""},
		hashed:    []string{"Deployment/kueue-system/kueue-controller-manager"},
		changes: []treeChange{{file: "components/manager/controller_manager_config.yaml",
			old: "healthProbeBindAddress: :8081", new: "healthProbeBindAddress: :8082",
			moved: []string{"Deployment/kueue-system/kueue-controller-manager"}}},
	},
	{
		// The legacy fields kustomize v5 still accepts: bases,
		// patchesStrategicMerge, vars (the webhook cert Secret's name is
		// $(SERVICE_NAME)-cert until kustomize substitutes it, after
		// the transformers), commonLabels; namespace and namePrefix. The
		// Secret is cert-manager's: external.
		name: "cluster-api v1.0 config/default", module: capiOld, root: "config", build: "default",
		workloads: map[string]string{"Deployment/capi-system/capi-controller-manager": "Secret/capi-webhook-service-cert"},
	},
	{
		// The same tree after kubebuilder's move to replacements and
		// patches.
		name: "cluster-api v1.9 config/default", module: capiNew, root: "config", build: "default",
		workloads: map[string]string{"Deployment/capi-system/capi-controller-manager": "Secret/capi-webhook-service-cert"},
	},
	{
		// Components with patchesStrategicMerge and patchesJson6902,
		// commonLabels; no workload reads a config: nothing changes.
		name: "metrics-server overlays/test-ha", module: metricsServer, root: "manifests", build: "overlays/test-ha",
		workloads: map[string]string{"Deployment/kube-system/metrics-server": ""},
	},
	{
		// A secretGenerator with hash suffix (an env file) that a patch
		// makes the db-manager read, one without suffix (the webhook
		// cert), a configMapGenerator without suffix the controller
		// mounts, namespace.
		name: "katib installs/katib-external-db", module: katibModule, root: "manifests/v1beta1", build: "installs/katib-external-db",
		workloads: map[string]string{
			"Deployment/kubeflow/katib-controller": "", "Deployment/kubeflow/katib-db-manager": "", "Deployment/kubeflow/katib-ui": "",
		},
		hashed: []string{"Deployment/kubeflow/katib-controller", "Deployment/kubeflow/katib-db-manager"},
		changes: []treeChange{
			{file: "installs/katib-external-db/secrets.env", old: "DB_USER=", new: "DB_USER=katib",
				moved: []string{"Deployment/kubeflow/katib-db-manager"}},
			{file: "installs/katib-external-db/katib-config.yaml", old: "webhookPort: 8443", new: "webhookPort: 9443",
				moved: []string{"Deployment/kubeflow/katib-controller"}},
		},
	},
	{
		// The same tree under an overlay of ours, as a user writes one
		// over a shipped install: namePrefix, nameSuffix and another
		// namespace, generators of the tree merged (a suffixed Secret and
		// an unsuffixed ConfigMap), a component that adds a suffixed
		// generator and a JSON patch making the UI read it.
		name: "katib installs/katib-external-db under an overlay", module: katibModule, root: "manifests/v1beta1", build: "prod",
		overlay: map[string]string{
			"prod/kustomization.yaml": `namePrefix: eu-
nameSuffix: -v2
namespace: ml
resources:
- ../installs/katib-external-db
components:
- ../ui-theme
secretGenerator:
- name: katib-mysql-secrets
  behavior: merge
  literals:
  - DB_PASSWORD=first
configMapGenerator:
- name: katib-config
  behavior: merge
  literals:
  - team=ml
`,
			"ui-theme/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
configMapGenerator:
- name: ui-env
  literals:
  - THEME=dark
patches:
- target:
    kind: Deployment
    name: katib-ui
  patch: |-
    - op: add
      path: /spec/template/spec/containers/0/envFrom
      value: [{configMapRef: {name: ui-env}}]
`,
		},
		workloads: map[string]string{
			"Deployment/ml/eu-katib-controller-v2": "", "Deployment/ml/eu-katib-db-manager-v2": "", "Deployment/ml/eu-katib-ui-v2": "",
		},
		hashed: []string{"Deployment/ml/eu-katib-controller-v2", "Deployment/ml/eu-katib-db-manager-v2", "Deployment/ml/eu-katib-ui-v2"},
		changes: []treeChange{
			{file: "prod/kustomization.yaml", old: "DB_PASSWORD=first", new: "DB_PASSWORD=second",
				moved: []string{"Deployment/ml/eu-katib-db-manager-v2"}},
			{file: "ui-theme/kustomization.yaml", old: "THEME=dark", new: "THEME=light",
				moved: []string{"Deployment/ml/eu-katib-ui-v2"}},
			{file: "installs/katib-external-db/katib-config.yaml", old: "webhookPort: 8443", new: "webhookPort: 9443",
				moved: []string{"Deployment/ml/eu-katib-controller-v2"}},
		},
	},
	{
		// bases, namePrefix, namespace, commonLabels, vars (one read from
		// a ConfigMap's data), patchesStrategicMerge over the ConfigMap
		// that the Deployment reads with envFrom.
		name: "flux2 registry-credentials-sync/aws", module: fluxModule, root: "manifests/integrations/registry-credentials-sync", build: "aws",
		workloads: map[string]string{"Deployment/flux-system/ecr-credentials-sync": ""},
		hashed:    []string{"Deployment/flux-system/ecr-credentials-sync"},
		changes: []treeChange{{file: "aws/config-patches.yaml", old: `SYNC_PERIOD: "21600"`, new: `SYNC_PERIOD: "3600"`,
			moved: []string{"Deployment/flux-system/ecr-credentials-sync"}}},
	},
	{
		// Argo CD's HA install: patches (one over a ConfigMap three
		// workloads read, by key or whole), images, redis-ha's ConfigMaps
		// from a rendered chart, TLS and redis Secrets made at install
		// time, external.
		name: "argo-cd ha/namespace-install", module: argoCDModule, root: "manifests", build: "ha/namespace-install",
		workloads: map[string]string{
			"Deployment//argocd-applicationset-controller": "Secret/argocd-repo-server-tls",
			"Deployment//argocd-dex-server":                "Secret/argocd-dex-server-tls",
			"Deployment//argocd-notifications-controller":  "Secret/argocd-repo-server-tls",
			"Deployment//argocd-redis-ha-haproxy":          "Secret/argocd-redis",
			"Deployment//argocd-repo-server":               "Secret/argocd-redis,Secret/argocd-repo-server-tls",
			"Deployment//argocd-server":                    "Secret/argocd-dex-server-tls,Secret/argocd-redis,Secret/argocd-repo-server-tls",
			"StatefulSet//argocd-application-controller":   "Secret/argocd-redis,Secret/argocd-repo-server-tls",
			"StatefulSet//argocd-redis-ha-server":          "Secret/argocd-redis",
		},
		hashed: []string{
			"Deployment//argocd-applicationset-controller", "Deployment//argocd-dex-server", "Deployment//argocd-notifications-controller",
			"Deployment//argocd-redis-ha-haproxy", "Deployment//argocd-repo-server", "Deployment//argocd-server",
			"StatefulSet//argocd-application-controller", "StatefulSet//argocd-redis-ha-server",
		},
		changes: []treeChange{
			// redis.server: read by key (env) or whole (a volume) by three.
			{file: "ha/base/overlays/argocd-cmd-params-cm.yaml", old: "argocd-redis-ha-haproxy:6379", new: "argocd-redis-ha-haproxy:6380",
				moved: []string{"Deployment//argocd-repo-server", "Deployment//argocd-server", "StatefulSet//argocd-application-controller"}},
			// redis.conf: the two that mount argocd-redis-ha-configmap.
			{file: "ha/base/redis-ha/chart/upstream.yaml", old: "min-replicas-to-write 1", new: "min-replicas-to-write 2",
				moved: []string{"Deployment//argocd-redis-ha-haproxy", "StatefulSet//argocd-redis-ha-server"}},
		},
	},
	{
		// An Argo Rollout with the nameReference configuration its docs
		// give, namePrefix, configMapGenerator and secretGenerator with
		// hash suffix read by env valueFrom, commonLabels,
		// commonAnnotations, vars; the configuration lies above the
		// kustomization.
		name: "argo-rollouts docs kustomize example", module: rolloutsModule, root: "docs/features/kustomize", build: "example",
		flags:     []string{"--load-restrictor", "LoadRestrictionsNone"},
		workloads: map[string]string{"Rollout//my-rollouts-demo": ""},
		hashed:    []string{"Rollout//my-rollouts-demo"},
		changes: []treeChange{
			{file: "example/kustomization.yaml", old: "FOO=BAR", new: "FOO=BAZ", moved: []string{"Rollout//my-rollouts-demo"}},
			{file: "example/kustomization.yaml", old: "password=Pa55w0rd", new: "password=other", moved: []string{"Rollout//my-rollouts-demo"}},
		},
	},
}

// TestRealTrees builds kustomize trees that projects ship, with confighash
// listed last under transformers: of the kustomization built, as
// docs/kustomize.md says, and checks that the render is kustomize's own
// render of the untouched tree but for confighash's annotations, that
// verify passes, that every hash and external list is the one computed
// from the final objects alone, and that a changed generator input moves
// the hash of exactly the workloads that read it.
func TestRealTrees(t *testing.T) {
	t.Parallel()
	for _, tc := range realTrees {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := moduleTree(t, tc.module, tc.root, tc.overlay)
			plain, _ := realBuild(t, filepath.Join(dir, tc.build), tc.flags, false)
			require.NotContains(t, plain, "confighash.dev/", "the tree as shipped")
			addConfighash(t, filepath.Join(dir, tc.build))
			out, stderr := realBuild(t, filepath.Join(dir, tc.build), tc.flags, true)

			assert.Equal(t, treeObjects(t, plain), treeObjects(t, out), "the objects differ from kustomize's render of the tree as shipped in more than confighash's annotations")
			verify := testtools.Run(t, "", nil, []byte(out), testtools.Tool(t, "confighash"), "verify")
			assert.Zero(t, verify.ExitCode, "confighash verify on the render\n%s", verify.Stderr)

			inputs := treeInputs(out)
			got := independentHashes(t, inputs)
			require.Equal(t, slices.Sorted(maps.Keys(tc.workloads)), slices.Sorted(maps.Keys(got)), "workloads in the render")
			for id, external := range tc.workloads {
				r := got[id]
				assert.Equal(t, r.want, r.hash, "%s: hash of what it reads, by the final names", id)
				assert.Equal(t, r.wantExternal, external, "%s: what it reads from outside the render, computed from the objects", id)
				assert.Equal(t, external, r.external, "%s: external annotation", id)
				if external != "" {
					assert.Contains(t, stderr, "recorded as external", "%s: reported as external", id)
				}
			}
			assert.NotContains(t, stderr, "confighash: error")
			hashes := testtools.PodHashes(t, inputs)
			assert.Equal(t, slices.Sorted(slices.Values(tc.hashed)), slices.Sorted(maps.Keys(hashes)), "hashed workloads")

			for _, c := range tc.changes {
				edit(t, filepath.Join(dir, c.file), c.old, c.new)
				changed, _ := realBuild(t, filepath.Join(dir, tc.build), tc.flags, true)
				assertMoved(t, c.file+": "+c.new, hashes, testtools.PodHashes(t, treeInputs(changed)), c.moved)
				edit(t, filepath.Join(dir, c.file), c.new, c.old)
			}
		})
	}
}

// moduleTree copies the folder root of a Go module into a temporary
// folder, writes the overlay files into the copy and returns the copy.
func moduleTree(t *testing.T, module, root string, overlay map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, testtools.CopyTree(filepath.Join(testtools.ModuleDir(t, module), root), dir, nil))
	writeTree(t, dir, overlay)
	return dir
}

// addConfighash writes confighash's functionConfig next to the
// kustomization in dir and lists it last under its transformers:.
func addConfighash(t *testing.T, dir string) {
	t.Helper()
	fc := testtools.ExecFunctionConfig(testtools.Tool(t, "confighash"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "confighash.yaml"), []byte(fc), 0o644))
	path := filepath.Join(dir, "kustomization.yaml")
	k, err := kyaml.ReadFile(path)
	require.NoError(t, err)
	seq, err := k.Pipe(kyaml.LookupCreate(kyaml.SequenceNode, "transformers"))
	require.NoError(t, err)
	require.NoError(t, seq.PipeE(kyaml.Append(kyaml.NewStringRNode("confighash.yaml").YNode())))
	require.NoError(t, kyaml.WriteFile(k, path))
}

// realBuild runs kustomize build in dir, with exec functions when exec is
// set, and returns what it printed.
func realBuild(t *testing.T, dir string, flags []string, exec bool) (out, stderr string) {
	t.Helper()
	args := append([]string{"build", "--enable-alpha-plugins"}, flags...)
	if exec {
		args = append(args, "--enable-exec")
	}
	res := testtools.Run(t, dir, nil, nil, testtools.Tool(t, "kustomize"), append(args, ".")...)
	require.Zero(t, res.ExitCode, res.Stderr)
	return res.Stdout, res.Stderr
}

// treeObjects returns the documents of a render in order: those of a kind
// confighash never writes to as kustomize printed them, the ConfigMaps,
// Secrets and workloads as realObjects reads them. Parsing only these keeps
// the megabytes of CRDs some trees hold fast to compare.
func treeObjects(t *testing.T, stream string) []string {
	t.Helper()
	var out []string
	for _, d := range testtools.Documents(stream) {
		if m := topKind.FindStringSubmatch(d); m != nil && !hashInputs[m[1]] && hashedTemplatePaths[m[1]] == nil {
			out = append(out, d)
			continue
		}
		out = append(out, realObjects(t, d)...)
	}
	return out
}

// treeInputs is configsAndWorkloads with every kind of hashedTemplatePaths
// kept (Argo Rollouts, DeploymentConfigs, ReplicationControllers).
func treeInputs(stream string) string {
	var b strings.Builder
	for _, d := range testtools.Documents(stream) {
		if m := topKind.FindStringSubmatch(d); m == nil || hashInputs[m[1]] || hashedTemplatePaths[m[1]] != nil {
			b.WriteString("---\n" + d + "\n")
		}
	}
	return b.String()
}

// TestRealTreesVars: kustomize substitutes vars: only after it ran the
// transformers, so confighash reads the webhook cert Secret's name that
// cluster-api v1.0's config/default writes as $(SERVICE_NAME)-cert. With
// the Secret outside the render (cert-manager's, the row above), the name
// kustomize substitutes into the external annotation is right; with the
// Secret in the render (testdata/kustomize/vars), the hash leaves it out:
// confighash says why and what to write instead, and verify on the render
// names the workload. The same tree with replacements:, which kustomize
// runs before the transformers, is hashed whole.
func TestRealTreesVars(t *testing.T) {
	dir := copyTree(t, filepath.Join("..", "testdata", "kustomize", "vars"))
	const id = "Deployment//capi-controller-manager"

	out, stderr := realBuild(t, filepath.Join(dir, "vars"), nil, true)
	assert.Contains(t, stderr, "Secret $(SERVICE_NAME)-cert")
	assert.Contains(t, stderr, "kustomize var")
	assert.Contains(t, stderr, "use replacements:")
	r := independentHashes(t, out)[id]
	require.NotEmpty(t, r.want, "the render holds the Secret the pod mounts\n%s", out)
	assert.NotEqual(t, r.want, r.hash)
	verify := testtools.Run(t, dir, nil, []byte(out), testtools.Tool(t, "confighash"), "verify")
	assert.Equal(t, 1, verify.ExitCode)
	assert.Contains(t, verify.Stderr, "Deployment capi-controller-manager")

	out, stderr = realBuild(t, filepath.Join(dir, "replacements"), nil, true)
	assert.NotContains(t, stderr, "confighash:")
	r = independentHashes(t, out)[id]
	require.NotEmpty(t, r.want, "the render holds the Secret the pod mounts\n%s", out)
	assert.Equal(t, r.want, r.hash)
	assert.Empty(t, r.external)
	verify = testtools.Run(t, dir, nil, []byte(out), testtools.Tool(t, "confighash"), "verify")
	assert.Zero(t, verify.ExitCode, verify.Stderr)
}
