package examples_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// kprobeTrees are trees under testdata/kustomize/probe-*, inputs kustomize
// users write that the docs trees do not hold, each checked as
// TestKustomizeDocs checks its trees (checkDocsTree).
var kprobeTrees = []docsTree{
	{
		// A local-config ConfigMap, a local-config generator with the hash
		// suffix and one without, renamed by a prefix, a suffix and a
		// namespace: kustomize fixes the pod's references to them before
		// it drops them, so the pod reads configs of their final names
		// that the render does not hold.
		name: "local-config configs under namePrefix, nameSuffix and namespace: external by their final names", tree: "probe-local-config", build: "prod",
		workloads: map[string]string{
			"Deployment/shop/prod-web-eu": "ConfigMap/prod-flags-eu-9hd57fhg78,ConfigMap/prod-settings-eu,Secret/prod-token-eu",
		},
		changes: []treeChange{
			{file: "base/configmaps.yaml", old: "LOG_LEVEL: info", new: "LOG_LEVEL: debug", moved: []string{"Deployment/shop/prod-web-eu"}},
			// Outside the render: no hash moves (the controller reads them).
			{file: "base/configmaps.yaml", old: `replicas: "3"`, new: `replicas: "4"`},
			// A new suffix, so a new name in the external list.
			{file: "base/kustomization.yaml", old: "FAST=true", new: "FAST=false"},
		},
	},
	{
		name: "a local-config generator's hash suffix alone: external by its suffixed name", tree: "probe-local-config", build: "plain",
		workloads: map[string]string{
			"Deployment//web": "ConfigMap/flags-9hd57fhg78,ConfigMap/settings,Secret/token",
		},
		changes: []treeChange{
			{file: "base/configmaps.yaml", old: "LOG_LEVEL: info", new: "LOG_LEVEL: debug", moved: []string{"Deployment//web"}},
			{file: "base/kustomization.yaml", old: "token=abc", new: "token=def"},
		},
	},
	{
		// The base next to a variant in which flags is an ordinary
		// ConfigMap (both/kustomization.yaml says what each reader reads).
		name: "a base's local-config generator next to a variant's ordinary one: each reader its own", tree: "probe-local-config", build: "both",
		workloads: map[string]string{
			"Deployment//web":        "ConfigMap/canary-settings,ConfigMap/flags-9hd57fhg78,Secret/canary-token",
			"Deployment//canary-web": "ConfigMap/canary-settings,Secret/canary-token",
		},
		changes: []treeChange{
			{file: "base/kustomization.yaml", old: "FAST=true", new: "FAST=false", moved: []string{"Deployment//canary-web"}},
			{file: "base/configmaps.yaml", old: "LOG_LEVEL: info", new: "LOG_LEVEL: debug", moved: []string{"Deployment//web", "Deployment//canary-web"}},
		},
	},
	{
		// Secrets encrypted with SOPS, as a Flux repository keeps them,
		// renamed by a prefix, a suffix and a namespace: external by their
		// final names (Flux decrypts them when it applies the render); a
		// new ciphertext moves no hash, the ConfigMap's value does.
		name: "SOPS-encrypted Secrets under namePrefix, nameSuffix and namespace: external by their final names", tree: "probe-sops", build: "prod",
		workloads: map[string]string{
			"Deployment/shop/prod-podinfo-eu": "Secret/prod-registry-eu,Secret/prod-token-eu",
		},
		changes: []treeChange{
			{file: "base/configmap.yaml", old: "LOG_LEVEL: info", new: "LOG_LEVEL: debug", moved: []string{"Deployment/shop/prod-podinfo-eu"}},
			{file: "base/secrets.enc.yaml", old: "data:Zmlyc3Q=", new: "data:c2Vjb25k"},
		},
	},
	{
		// confighash as a component listed last in a kustomization with
		// no transformer of its own: it runs after that kustomization's
		// resources, generators (one merging into the base's) and
		// components, so its hash is of the final objects.
		name: "confighash as the last component of a kustomization without transformers", tree: "probe-component", build: "prod",
		workloads: map[string]string{"Deployment//team-web": ""},
		changes: []treeChange{
			{file: "prod/kustomization.yaml", old: "DEBUG=false", new: "DEBUG=true", moved: []string{"Deployment//team-web"}},
			{file: "prod/kustomization.yaml", old: "LEVEL=info", new: "LEVEL=debug", moved: []string{"Deployment//team-web"}},
			{file: "base/kustomization.yaml", old: "MODE=fast", new: "MODE=slow", moved: []string{"Deployment//team-web"}},
		},
	},
}

// TestKustomizeProbes builds the kprobeTrees with the real kustomize.
func TestKustomizeProbes(t *testing.T) {
	t.Parallel()
	for _, tc := range kprobeTrees {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkDocsTree(t, filepath.Join("..", "testdata", "kustomize", tc.tree), tc)
		})
	}
}

// kprobeWrite writes files (path relative to dir: content) into dir.
func kprobeWrite(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// kprobeFunction is a functionConfig (a ConfigMap, as kpt passes one)
// running the exec function at path.
func kprobeFunction(path string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fn\n  annotations:\n" +
		"    config.kubernetes.io/function: |\n      exec:\n        path: " + path + "\n"
}

// TestKustomizeProbeListings: where else than last under transformers: a
// user lists confighash, and what kustomize (v5.8.2) does with it.
func TestKustomizeProbeListings(t *testing.T) {
	kustomize := testtools.Tool(t, "kustomize")
	bin := testtools.Tool(t, "confighash")
	build := func(dir string) testtools.Result {
		return testtools.Run(t, dir, nil, nil, kustomize, "build", "--enable-alpha-plugins", "--enable-exec", ".")
	}

	// Under validators:, over a base that holds confighash, so that it has
	// nothing to change: kustomize refuses the output of any exec function
	// there, cat's too, so it can be no check of the render.
	t.Run("validators: refused, even unchanged", func(t *testing.T) {
		dir := copyTree(t, filepath.Join("..", "testdata", "kustomize", "hashed-base"))
		for _, path := range []string{bin, "/bin/cat"} {
			kprobeWrite(t, dir, map[string]string{
				"check/kustomization.yaml": "resources:\n- ../base\nvalidators:\n- validator.yaml\n",
				"check/validator.yaml":     kprobeFunction(path),
			})
			res := build(filepath.Join(dir, "check"))
			assert.NotZero(t, res.ExitCode, "%s as a validator", path)
			assert.Contains(t, res.Stderr, "validator shouldn't modify the resource map", path)
		}
		res := build(filepath.Join(dir, "base"))
		require.Zero(t, res.ExitCode, res.Stderr)
		assert.Len(t, hashes(t, res.Stdout), 1, "the base alone is hashed")
	})

	// A folder of transformer configs shared by overlays (transformers:
	// [../../shared]): kustomize reads the exec path relative to the
	// kustomization that lists the folder, not to the folder, so a relative
	// path serves only overlays at one depth.
	t.Run("a shared transformers folder: the path from the listing kustomization", func(t *testing.T) {
		dir := copyTree(t, filepath.Join("..", "testdata", "kustomize", "probe-local-config"))
		rel, err := filepath.Rel(filepath.Join(dir, "overlays", "eu"), bin)
		require.NoError(t, err)
		overlay := "resources:\n- ../../base\ntransformers:\n- ../../shared\n"
		kprobeWrite(t, dir, map[string]string{
			"shared/kustomization.yaml":           "resources:\n- confighash.yaml\n",
			"shared/confighash.yaml":              kprobeFunction(rel),
			"overlays/eu/kustomization.yaml":      overlay,
			"deep/overlays/us/kustomization.yaml": "resources:\n- ../../../base\ntransformers:\n- ../../../shared\n",
		})
		res := build(filepath.Join(dir, "overlays", "eu"))
		require.Zero(t, res.ExitCode, res.Stderr)
		assert.Len(t, hashes(t, res.Stdout), 1)
		verify := testtools.Run(t, dir, nil, []byte(res.Stdout), bin, "verify")
		assert.Zero(t, verify.ExitCode, verify.Stderr)

		res = build(filepath.Join(dir, "deep", "overlays", "us"))
		assert.NotZero(t, res.ExitCode, "one level deeper, the same relative path reaches no binary")
		assert.Contains(t, res.Stderr, "fork/exec "+rel+": no such file or directory")
	})

	// The HMAC key file named in the exec spec's envs (the key itself
	// would be committed there): a relative path is read from the folder
	// of what lists confighash, here a component.
	t.Run("the HMAC key file in the exec spec's envs", func(t *testing.T) {
		dir := copyTree(t, filepath.Join("..", "testdata", "kustomize", "probe-component"))
		key := filepath.Join(dir, "confighash", "hmac.key")
		require.NoError(t, os.WriteFile(key, []byte("kprobe-hmac-key-0123456789abcdef\n"), 0o600))
		edit(t, filepath.Join(dir, "confighash", "confighash.yaml"), "        path: "+bin+"\n",
			"        path: "+bin+"\n        envs: [CONFIGHASH_HMAC_KEY_FILE=hmac.key]\n")
		res := build(filepath.Join(dir, "prod"))
		require.Zero(t, res.ExitCode, res.Stderr)
		assert.Contains(t, res.Stdout, "confighash.dev/hash: v1-hmac-sha256:")
		assert.NotContains(t, res.Stdout+res.Stderr, "kprobe-hmac-key")
		verify := testtools.Run(t, dir, nil, []byte(res.Stdout), bin, "verify", "--hmac-key-file", key)
		assert.Zero(t, verify.ExitCode, verify.Stderr)

		require.NoError(t, os.Rename(key, filepath.Join(dir, "prod", "hmac.key")))
		res = build(filepath.Join(dir, "prod"))
		assert.NotZero(t, res.ExitCode, "the key next to the kustomization built, not the component")
		assert.Contains(t, res.Stderr, "a relative path, looked for in "+filepath.Join(dir, "confighash"))
	})
}

// TestKptProbePipeline sends confighash the ResourceLists kpt sends for
// examples/kpt in pipelines users write (kpt itself cannot be installed
// here): the render checked with `kpt fn source . | confighash verify`
// passes; a set-namespace mutator after confighash, or selectors that give
// confighash the workloads without their configs, leave a render verify
// refuses.
func TestKptProbePipeline(t *testing.T) {
	bin := testtools.Tool(t, "confighash")
	fc := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata:\n  annotationPrefix: confighash.dev\n"
	pkg := readFiles(t, "kpt", "configmap.yaml", "deployment.yaml")
	render := func(items string) string {
		res := testtools.Run(t, "", nil, []byte(resourceList(t, items, fc, "")), bin)
		require.Zero(t, res.ExitCode, res.Stderr)
		return res.Stdout
	}
	verify := func(rl string) testtools.Result {
		return testtools.Run(t, "", nil, []byte(rl), bin, "verify")
	}

	rendered := render(pkg)
	require.Len(t, hashes(t, rendered), 1)
	res := verify(rendered)
	assert.Zero(t, res.ExitCode, "the rendered package, as kpt fn source prints it\n%s", res.Stderr)

	// set-namespace after confighash: the configs it hashed now live
	// elsewhere.
	nodes, err := kio.FromBytes([]byte(rendered))
	require.NoError(t, err)
	for _, n := range nodes {
		require.NoError(t, n.SetNamespace("shop"))
	}
	moved, err := kio.StringAll(nodes)
	require.NoError(t, err)
	res = verify(moved)
	assert.Equal(t, 1, res.ExitCode, "a namespace set after the hash\n%s", moved)
	assert.Contains(t, res.Stderr, "Deployment shop/web")

	// selectors: [{kind: Deployment}] on confighash: kpt sends the
	// Deployment alone, and passes the ConfigMap by.
	selected := render(readFiles(t, "kpt", "deployment.yaml"))
	assert.Empty(t, hashes(t, selected), "no config in its input: no hash")
	assert.Contains(t, selected, "confighash.dev/external: 'ConfigMap/site'")
	res = verify(resourceList(t, readFiles(t, "kpt", "configmap.yaml")+"---\n"+kprobeItem(t, selected, "Deployment"), "", ""))
	assert.Equal(t, 1, res.ExitCode, "the package with the Deployment as that run left it")
	assert.Contains(t, res.Stderr, "Deployment web")
}

// kprobeItem returns the item of a ResourceList of the given kind, as YAML.
func kprobeItem(t *testing.T, rl, kind string) string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(rl))
	require.NoError(t, err)
	for _, n := range nodes {
		if n.GetKind() == kind {
			s, err := n.String()
			require.NoError(t, err)
			return s
		}
	}
	t.Fatalf("no %s in\n%s", kind, rl)
	return ""
}

// TestKustomizeProbeCRDs: kustomize's crds: field takes OpenAPI
// definitions whose fields x-kubernetes-object-ref-kind marks as references
// and fixes them, but follows object properties only, not lists: a
// reference in a CRD's pod template (under containers, volumes) stays as
// written, so the pod reads a config the render does not hold under that
// name, and verify exits 1 naming the workload, as it does without any
// nameReference configuration.
func TestKustomizeProbeCRDs(t *testing.T) {
	bin := testtools.Tool(t, "confighash")
	dir := t.TempDir()
	kprobeWrite(t, dir, map[string]string{
		"kustomization.yaml": "namePrefix: p-\ncrds: [crd.json]\nresources: [worker.yaml]\n" +
			"configMapGenerator:\n- name: cfg\n  literals: [A=1]\ntransformers: [confighash.yaml]\n",
		"confighash.yaml": "apiVersion: confighash.dev/v1alpha1\nkind: ConfigHash\nmetadata:\n  name: confighash\n  annotations:\n" +
			"    config.kubernetes.io/function: |\n      exec:\n        path: " + bin + "\n" +
			"workloads:\n- {group: example.com, kind: Worker, path: spec/template}\n",
		"worker.yaml": "apiVersion: example.com/v1\nkind: Worker\nmetadata: {name: w}\nspec:\n  configRef: {name: cfg}\n" +
			"  template:\n    spec:\n      containers:\n      - name: w\n        envFrom:\n        - configMapRef: {name: cfg}\n",
		"crd.json": `{
  "example.com/v1.Worker": {"Schema": {"properties": {
    "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
    "spec": {"$ref": "example.com/v1.WorkerSpec"}}}},
  "example.com/v1.WorkerSpec": {"Schema": {"properties": {
    "configRef": {"type": "object", "x-kubernetes-object-ref-api-version": "v1", "x-kubernetes-object-ref-kind": "ConfigMap"},
    "template": {"$ref": "example.com/v1.Template"}}}},
  "example.com/v1.Template": {"Schema": {"properties": {"spec": {"$ref": "example.com/v1.PodSpec"}}}},
  "example.com/v1.PodSpec": {"Schema": {"properties": {
    "containers": {"type": "array", "items": {"$ref": "example.com/v1.Container"}}}}},
  "example.com/v1.Container": {"Schema": {"properties": {
    "envFrom": {"type": "array", "items": {"$ref": "example.com/v1.EnvFrom"}}}}},
  "example.com/v1.EnvFrom": {"Schema": {"properties": {
    "configMapRef": {"type": "object", "x-kubernetes-object-ref-api-version": "v1", "x-kubernetes-object-ref-kind": "ConfigMap"}}}}
}
`,
	})
	out := kustomizeBuild(t, dir)
	nodes, err := kio.FromBytes([]byte(out))
	require.NoError(t, err)
	var cfg string
	for _, n := range nodes {
		if n.GetKind() == "ConfigMap" {
			cfg = n.GetName()
		}
	}
	require.Regexp(t, `^p-cfg-[a-z0-9]{10}$`, cfg)
	w := kprobeItem(t, out, "Worker")
	assert.Contains(t, w, "configRef:\n    name: "+cfg+"\n", "an object field marked in crds: is fixed")
	assert.Contains(t, w, "configMapRef:\n            name: cfg\n", "one under a list is not")
	verify := testtools.Run(t, dir, nil, []byte(out), bin, "verify", "--workload", "Worker.example.com=spec/template")
	assert.Equal(t, 1, verify.ExitCode, verify.Stderr)
	assert.Contains(t, verify.Stderr, "Worker p-w")
	assert.Contains(t, verify.Stderr, "nameReference configuration")
}
