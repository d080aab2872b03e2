package examples_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// execPath matches the exec function path of the fixtures, relative to
// each kustomization; copyTree makes it absolute.
var execPath = regexp.MustCompile(`path: \S*bin/confighash`)

// copyTree copies a fixture tree into a temp dir and points its exec
// functions at the confighash binary under test.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	bin := testtools.Tool(t, "confighash")
	err := testtools.CopyTree(src, dst, func(_, _ string, b []byte) ([]byte, error) {
		return execPath.ReplaceAll(b, []byte("path: "+bin)), nil
	})
	require.NoError(t, err)
	return dst
}

// podTemplatePaths are where the fixtures' workloads hold their pod
// templates, CloneSet included (configured in its functionConfig).
var podTemplatePaths = map[string][]string{
	"Deployment":  {"spec", "template"},
	"StatefulSet": {"spec", "template"},
	"DaemonSet":   {"spec", "template"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template"},
	"CloneSet":    {"spec", "template"},
	"Worker":      {"spec", "runner", "template"},
	// Kinds confighash knows whose references kustomize fixes only
	// through a nameReference configuration.
	"Rollout":               {"spec", "template"},
	"DeploymentConfig":      {"spec", "template"},
	"ReplicationController": {"spec", "template"},
}

// workloadGroups are the API groups in which a kind of hashedTemplatePaths
// that Kubernetes or a well-known project defines is a workload; an object
// of that kind in another group is none (kustomize's own tests write
// Deployments with apiVersion: v1). Kinds a test configures (CloneSet,
// Worker) are not listed: any group.
var workloadGroups = map[string][]string{
	"Deployment": {"apps", "extensions"}, "DaemonSet": {"apps", "extensions"}, "StatefulSet": {"apps"},
	"Job": {"batch"}, "CronJob": {"batch"}, "Rollout": {"argoproj.io"}, "DeploymentConfig": {"apps.openshift.io"},
	"ReplicationController": {""},
}

// inWorkloadGroup reports whether n's group is one workloadGroups lists
// for its kind (or its kind is not listed).
func inWorkloadGroup(n *kyaml.RNode) bool {
	groups, ok := workloadGroups[n.GetKind()]
	if !ok {
		return true
	}
	group, _, versioned := strings.Cut(n.GetApiVersion(), "/")
	if !versioned {
		group = ""
	}
	return slices.Contains(groups, group)
}

// hashedTemplatePaths are podTemplatePaths and a Job's: the pod templates
// whose hashes the independent checks compute. A Job's is kept out of
// podTemplatePaths on purpose: withoutConfighash strips confighash's
// annotations from those templates, so one written into a Job's pod
// template (which the API server refuses to change) still fails the checks
// that only confighash's annotations were added.
var hashedTemplatePaths = func() map[string][]string {
	paths := maps.Clone(podTemplatePaths)
	paths["Job"] = []string{"spec", "template"}
	return paths
}()

// isBatchJob reports whether n is a Job, whose hash confighash writes on the
// Job itself: the API server refuses any change of a Job's pod template.
func isBatchJob(n *kyaml.RNode) bool {
	return n.GetKind() == "Job" && strings.HasPrefix(n.GetApiVersion(), "batch/")
}

// rendered is what the test reads back from a final render.
type rendered struct {
	hash, external string
	// want is the hash computed independently from the final objects, and
	// wantExternal the uses not among them.
	want, wantExternal string
}

// independentHashes computes, from the final objects alone (typed reads and
// the hashing package, not the filter), what every workload consumes from
// the render and its hash, next to what the render wrote.
func independentHashes(t *testing.T, out string) map[string]rendered {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(out))
	require.NoError(t, err)
	configs := independentConfigs(t, nodes)
	got := map[string]rendered{}
	for _, n := range nodes {
		if !inWorkloadGroup(n) {
			continue
		}
		if path := hashedTemplatePaths[n.GetKind()]; path != nil {
			if tpl, err := n.Pipe(kyaml.Lookup(path...)); err == nil && tpl == nil {
				// A workload without a pod template, which kustomize's
				// own tests write: nothing to hash, nothing written.
				got[n.GetKind()+"/"+n.GetNamespace()+"/"+n.GetName()] = rendered{
					hash: n.GetAnnotations()["confighash.dev/hash"], external: n.GetAnnotations()["confighash.dev/external"]}
				continue
			}
		}
		tpl, ok := testtools.PodTemplate(t, n, hashedTemplatePaths)
		if !ok {
			continue
		}
		holder := tpl
		if isBatchJob(n) {
			holder = n
		}
		spec := independentPodSpec(t, tpl)
		ns := n.GetNamespace()
		lookup := func(kind hashing.Kind, name string) (hashing.Content, bool) {
			c, ok := configs[string(kind)+"/"+ns+"/"+name]
			return c, ok
		}
		var inStream []hashing.Use
		var external []string
		for _, u := range hashing.Discover(&spec) {
			if _, ok := lookup(u.Kind, u.Name); ok {
				inStream = append(inStream, u)
			} else {
				external = append(external, u.Ref())
			}
		}
		r := rendered{
			hash:         holder.GetAnnotations()["confighash.dev/hash"],
			external:     n.GetAnnotations()["confighash.dev/external"],
			wantExternal: strings.Join(external, ","),
		}
		if len(inStream) > 0 {
			r.want = hashing.Compute(ns, inStream, lookup, hashing.Options{})
		}
		got[n.GetKind()+"/"+ns+"/"+n.GetName()] = r
	}
	return got
}

// independentConfigs reads the ConfigMaps and Secrets among nodes through
// the API types and the hashing package, by Kind/namespace/name. The JSON
// of a node is read as JSON: sigs.k8s.io/yaml would read it as YAML, which
// breaks lines at a NEL (U+0085) that json.Marshal leaves unescaped.
func independentConfigs(t *testing.T, nodes []*kyaml.RNode) map[string]hashing.Content {
	t.Helper()
	configs := map[string]hashing.Content{}
	for _, n := range nodes {
		if n.GetApiVersion() != "v1" {
			continue
		}
		if n.Field("sops") != nil && (n.GetKind() == "ConfigMap" || n.GetKind() == "Secret") {
			// Encrypted with SOPS: ciphertext that Flux decrypts when it
			// applies the render, external.
			continue
		}
		raw := nodeJSON(t, n)
		switch n.GetKind() {
		case "ConfigMap":
			var cm corev1.ConfigMap
			require.NoError(t, json.Unmarshal(raw, &cm))
			if cm.Annotations["service.beta.openshift.io/inject-cabundle"] == "true" ||
				cm.Labels["config.openshift.io/inject-trusted-cabundle"] == "true" {
				// OpenShift's operators write a CA bundle into it after
				// the apply: external, as the token Secret below.
				continue
			}
			c, err := hashing.ConfigMapContent(&cm)
			require.NoError(t, err)
			configs["ConfigMap/"+cm.Namespace+"/"+cm.Name] = c
		case "Secret":
			var s corev1.Secret
			require.NoError(t, json.Unmarshal(raw, &s))
			if s.Type == corev1.SecretTypeServiceAccountToken {
				// The token controller writes its data after the apply:
				// the render's content is not the cluster's, external.
				continue
			}
			configs["Secret/"+s.Namespace+"/"+s.Name] = hashing.SecretContent(&s)
		}
	}
	return configs
}

// independentPodSpec decodes the spec of a pod template node through the
// API types.
func independentPodSpec(t *testing.T, tpl *kyaml.RNode) corev1.PodSpec {
	t.Helper()
	specNode, err := tpl.Pipe(kyaml.Lookup("spec"))
	require.NoError(t, err)
	raw, err := specNode.MarshalJSON()
	require.NoError(t, err)
	var spec corev1.PodSpec
	require.NoError(t, json.Unmarshal(raw, &spec))
	return spec
}

// TestKustomizeRenames renders overlays as people write them, with the real
// kustomize running bin/confighash as an exec function, and checks the
// final output: every workload carries the hash of exactly what it consumes
// under the names the cluster will hold, computed independently from the
// final objects; only configs really missing from the render are external.
func TestKustomizeRenames(t *testing.T) {
	cases := []struct {
		name string
		// tree is the fixture under testdata/kustomize, build the
		// kustomization to build inside it.
		tree, build string
		// helm inflates the kustomization's helmCharts (--enable-helm).
		helm bool
		// flags are more kustomize build flags, for both builds.
		flags []string
		// verify are the flags verify needs: the functionConfig's workloads.
		verify []string
		// external lists, per workload (Kind/namespace/name), what it
		// consumes from outside the render; every workload hashes something.
		external map[string]string
	}{
		{name: "namePrefix", tree: "prefix", build: ".",
			external: map[string]string{"Deployment//prod-web": "Secret/vault-token"}},
		{name: "nameSuffix with generators", tree: "suffix-generators", build: ".",
			external: map[string]string{"StatefulSet//db-eu": "", "CronJob//backup-eu": ""}},
		{name: "namespace, prefix, suffix and a generator", tree: "namespace", build: ".",
			external: map[string]string{"DaemonSet/shop/shop-agent-v2": ""}},
		{name: "base holds the transformer", tree: "base-transformer", build: "overlay",
			external: map[string]string{"Deployment//team-api": ""}},
		{name: "component renames and generates", tree: "components", build: "app",
			external: map[string]string{"Deployment//blue-ui": ""}},
		{name: "two candidates, kustomize's prefix rules", tree: "ambiguous", build: ".",
			external: map[string]string{"Deployment//a-web": "", "Deployment//lonely": "ConfigMap/cfg"}},
		{name: "CRD workload with nameReference configuration", tree: "crd-workload", build: ".",
			verify:   []string{"--workload=CloneSet.apps.kruise.io=spec/template"},
			external: map[string]string{"CloneSet//prod-shop": ""}},
		{name: "three levels, generators merged and replaced", tree: "generator-overlays", build: "prod",
			external: map[string]string{"Deployment/prod/team-web-prod": ""}},
		{name: "helmCharts: a local chart, prefixed, reading a generated ConfigMap", tree: "helm-chart", build: ".", helm: true,
			external: map[string]string{"Deployment//eu-shop": ""}},
		{name: "generator patched into a Secret: the ConfigMap reference renamed, external", tree: "kind-change", build: ".",
			external: map[string]string{"Deployment//prod-web": "ConfigMap/prod-certs-cc456d6fd2"}},
		{name: "local-config ConfigMap: kustomize drops it, a reference to its name is external", tree: "local-config", build: ".",
			external: map[string]string{"Deployment//web": "ConfigMap/settings"}},
		{name: "build metadata, fifo order, namespace over other namespaces, replicas, images", tree: "build-options", build: ".",
			external: map[string]string{"Deployment/shop/web": ""}},
		{name: "several namespaces: a Secret of another namespace is no match", tree: "cross-namespace", build: ".",
			external: map[string]string{"Deployment/shop/web": "Secret/creds"}},
		{name: "a config without namespace, renamed: a workload of a named namespace keeps the old name (external)", tree: "unnamespaced-config", build: ".",
			verify:   []string{"--namespace", "shop"},
			external: map[string]string{"Deployment/shop/eu-web": "ConfigMap/cfg"}},
		{name: "configs the cluster fills in (a service account token Secret, OpenShift's CA bundles) under a prefix: external by their final names", tree: "sa-token", build: "prod",
			external: map[string]string{"Deployment//prod-web": "ConfigMap/prod-service-ca,ConfigMap/prod-trusted-ca,Secret/prod-web-token"}},
		{name: "components adding configs and patches to one workload, one merging another's generator", tree: "components-patches", build: "prod",
			external: map[string]string{"Deployment/shop/prod-web-eu": ""}},
		{name: "transformer configs around confighash, a generator config under generators:", tree: "transformer-order", build: ".",
			external: map[string]string{"Deployment/shop/eu-web-v2": ""}},
		{name: "CRD base under a prefix, openapi: schema for its patch, build metadata, legacy order", tree: "crd-openapi", build: "prod",
			verify:   []string{"--workload=CloneSet.apps.kruise.io=spec/template"},
			external: map[string]string{"CloneSet//prod-shop": ""}},
		{name: "Argo CD's build options: files outside the kustomization's root", tree: "argocd", build: "apps/web",
			flags:    []string{"--load-restrictor", "LoadRestrictionsNone"},
			external: map[string]string{"Deployment//argo-web": ""}},
		{name: "base and overlay both hold the transformer: the overlay's run rewrites the base's hash and external list", tree: "hashed-base", build: "prod",
			external: map[string]string{"Deployment/shop/prod-web": ""}},
		{name: "replacements naming configs in key references, envFrom, projected sources and a volume over three levels, a config renamed by one", tree: "replacement-refs", build: "prod",
			external: map[string]string{"Deployment/shop/prod-team-web-eu": "", "Deployment/shop/prod-worker-eu": ""}},
		{name: "JSON and strategic merge patches by label selector and name pattern adding references by base and intermediate names, two levels up", tree: "patch-targets", build: "prod",
			external: map[string]string{"Deployment/shop/prod-team-api-eu": "", "Deployment/shop/prod-team-front-eu": "", "StatefulSet/shop/prod-team-store-eu": ""}},
		{name: "a component merging and replacing generators applied twice in a stack and once in a sibling, typed immutable Secrets", tree: "component-twice", build: "prod",
			external: map[string]string{"Deployment/shop/left-web-v2": "", "Deployment/shop/right-web": ""}},
		{name: "a config's current name another's previous one: kustomize follows the previous name", tree: "name-collision", build: ".",
			external: map[string]string{"Deployment//p-web": "", "Deployment//reader": ""}},
		{name: "a NamespaceTransformer with unsetOnly: objects of another namespace stay, references across are external", tree: "namespace-unset-only", build: "prod",
			external: map[string]string{"Deployment/shop/p-web": "ConfigMap/pinned,Secret/creds", "Deployment/other/p-elsewhere": "ConfigMap/app"}},
		{name: "a variant whose PrefixSuffixTransformer prefixes only its configs: kustomize's prefix rule points both readers at the base's config", tree: "restricted-prefix", build: ".",
			external: map[string]string{"Deployment//web": "", "Deployment//v-web": ""}},
		{name: "an Argo Rollout, an OpenShift DeploymentConfig and a ReplicationController with their nameReference configuration", tree: "nameref-kinds", build: ".",
			external: map[string]string{"Rollout//prod-shop": "", "DeploymentConfig//prod-legacy": "", "ReplicationController//prod-old": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, filepath.Join("..", "testdata", "kustomize", tc.tree))
			build := func(flags ...string) string {
				args := append(append([]string{"build", "--enable-alpha-plugins"}, tc.flags...), flags...)
				if tc.helm {
					args = append(args, "--enable-helm", "--helm-command", testtools.Tool(t, "helm3"))
				}
				res := testtools.Run(t, filepath.Join(dir, tc.build), nil, nil, testtools.Tool(t, "kustomize"), append(args, ".")...)
				require.Zero(t, res.ExitCode, res.Stderr)
				return res.Stdout
			}
			out := build("--enable-exec")
			got := independentHashes(t, out)
			require.Equal(t, sortedKeys(tc.external), sortedKeys(got), "workloads in the render\n%s", out)
			for id, wantExternal := range tc.external {
				r := got[id]
				assert.Equal(t, wantExternal, r.wantExternal, "%s: the fixture's really external configs", id)
				require.NotEmpty(t, r.want, "%s consumes something from the render", id)
				assert.Equal(t, r.want, r.hash, "%s: hash of what it consumes, by the final names\n%s", id, out)
				assert.Equal(t, wantExternal, r.external, "%s: external annotation", id)
			}
			verify := testtools.Run(t, dir, nil, []byte(out), testtools.Tool(t, "confighash"), append([]string{"verify"}, tc.verify...)...)
			assert.Zero(t, verify.ExitCode, "confighash verify on the final render\n%s", verify.Stderr)
			// Without --enable-exec kustomize skips the function: the same
			// build, objects and order, but for what confighash writes.
			assert.Equal(t, withoutConfighash(t, build()), withoutConfighash(t, out), "only confighash's annotations added")
		})
	}
}

// withoutConfighash removes confighash's annotations (on objects and their
// pod templates, and the template metadata written only to hold them) from
// a render, in one serialisation for both sides of a comparison.
func withoutConfighash(t *testing.T, out string) string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(out))
	require.NoError(t, err)
	strip := func(n *kyaml.RNode) {
		for k := range n.GetAnnotations() {
			if strings.HasPrefix(k, "confighash.dev/") {
				require.NoError(t, n.PipeE(kyaml.ClearAnnotation(k)))
			}
		}
		require.NoError(t, kyaml.ClearEmptyAnnotations(n))
	}
	for _, n := range nodes {
		strip(n)
		if path, ok := podTemplatePaths[n.GetKind()]; ok {
			tpl, err := n.Pipe(kyaml.Lookup(path...))
			require.NoError(t, err)
			if tpl != nil {
				strip(tpl)
			}
		}
	}
	s, err := kio.StringAll(nodes)
	require.NoError(t, err)
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestExtraWorkloadKinds runs a CRD workload end to end, its pod template
// location given each way a user can give it: the functionConfig's
// workloads and the --workload flag as exec args under the real kustomize,
// --workload in stream mode, a kpt-style ConfigMap functionConfig in KRM
// mode. Without the configuration the kind is not a workload.
func TestExtraWorkloadKinds(t *testing.T) {
	t.Run("kustomize, --workload as exec args", func(t *testing.T) {
		dir := copyTree(t, filepath.Join("..", "testdata", "kustomize", "crd-workload"))
		fc := filepath.Join(dir, "confighash.yaml")
		edit(t, fc, "workloads:\n- {group: apps.kruise.io, kind: CloneSet, path: spec/template}\n", "")
		edit(t, fc, "      exec:\n", "      exec:\n        args: [--workload, CloneSet.apps.kruise.io=spec/template]\n")
		got := independentHashes(t, kustomizeBuild(t, dir))
		r := got["CloneSet//prod-shop"]
		require.NotEmpty(t, r.want)
		assert.Equal(t, r.want, r.hash)
		assert.Empty(t, r.external)

		edit(t, fc, "        args: [--workload, CloneSet.apps.kruise.io=spec/template]\n", "")
		assert.Empty(t, independentHashes(t, kustomizeBuild(t, dir))["CloneSet//prod-shop"].hash, "not configured: not a workload")
	})

	stream, err := os.ReadFile(filepath.Join("..", "testdata", "kustomize", "crd-stream", "stream.yaml"))
	require.NoError(t, err)
	want := independentHashes(t, string(stream))["Worker/jobs/crunch"].want
	require.NotEmpty(t, want)
	bin := testtools.Tool(t, "confighash")

	t.Run("stream mode, --workload", func(t *testing.T) {
		res := testtools.Run(t, "", nil, stream, bin, "--workload", "Worker.example.com=spec/runner/template")
		require.Zero(t, res.ExitCode, res.Stderr)
		got := independentHashes(t, res.Stdout)["Worker/jobs/crunch"]
		assert.Equal(t, want, got.hash)
		assert.Empty(t, got.external)
		assert.Contains(t, res.Stdout, "# A CRD whose pod template", "stream mode keeps comments")

		res = testtools.Run(t, "", nil, stream, bin)
		require.Zero(t, res.ExitCode, res.Stderr)
		assert.Equal(t, string(stream), res.Stdout, "not configured: not a workload, nothing changes")
	})

	t.Run("KRM, ConfigMap functionConfig", func(t *testing.T) {
		fc := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fn\ndata:\n  workloads: Worker.example.com=spec/runner/template\n"
		body := strings.SplitN(string(stream), "\n", 3)[2] // without the leading comment lines
		rl := resourceList(t, body, fc, "")
		res := testtools.Run(t, "", nil, []byte(rl), bin)
		require.Zero(t, res.ExitCode, res.Stderr)
		assert.Equal(t, want, independentHashes(t, res.Stdout)["Worker/jobs/crunch"].hash)
	})
}

// TestKustomizeChangedAfterFunction: a function cannot know what kustomize
// changes after it runs: a kustomization above a base that holds confighash
// adding a namePrefix or a namespace, merging a generator, patching a
// ConfigMap's data or adding a config the base lacked; confighash in a
// component before other components and the renames of the kustomization
// that uses it; transformers listed after it that rename and move configs;
// references in a kind kustomize fixes only with a nameReference
// configuration (a CRD, an Argo Rollout, an OpenShift DeploymentConfig, a
// ReplicationController) when there is none, or when it lacks a field the pods read through. The
// hash then is of objects the final render does not hold; `confighash
// verify` on the final render is the guard that says so.
func TestKustomizeChangedAfterFunction(t *testing.T) {
	cases := []struct {
		name, tree, build string
		// file, old and new edit the copied fixture.
		file, old, new string
		verifyArgs     []string // how verify finds the workloads
		// stale maps each workload (Kind/namespace/name in the render) to
		// what verify names.
		stale map[string]string
		// hint is a part of what verify says the cause may be.
		hint string
	}{
		{name: "namePrefix above the base's function", tree: "base-transformer", build: "overlay",
			file: "overlay/kustomization.yaml", old: "resources:\n", new: "namePrefix: late-\nresources:\n",
			stale: map[string]string{"Deployment//late-team-api": "Deployment late-team-api"}},
		{name: "namespace above the base's function", tree: "base-transformer", build: "overlay",
			file: "overlay/kustomization.yaml", old: "resources:\n", new: "namespace: shop\nresources:\n",
			stale: map[string]string{"Deployment/shop/team-api": "Deployment shop/team-api"}},
		{name: "generator merged above the base's function", tree: "base-transformer", build: "overlay",
			file: "overlay/kustomization.yaml", old: "resources:\n",
			new:   "configMapGenerator:\n- name: gen\n  behavior: merge\n  literals: [MODE=slow]\nresources:\n",
			stale: map[string]string{"Deployment//team-api": "Deployment team-api"}},
		{name: "ConfigMap data patched above the base's function", tree: "base-transformer", build: "overlay",
			file: "overlay/kustomization.yaml", old: "resources:\n",
			new:   "patches:\n- patch: |-\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: team-cfg}\n    data: {greeting: hi}\nresources:\n",
			stale: map[string]string{"Deployment//team-api": "Deployment team-api"}},
		{name: "overlay without the function over a base that holds it", tree: "hashed-base", build: "prod",
			file: "prod/kustomization.yaml", old: "transformers:\n- confighash.yaml\n", new: "",
			stale: map[string]string{"Deployment/shop/prod-web": "Deployment shop/prod-web"}},
		{name: "component holding the function before other components and renames", tree: "components-patches", build: "prod",
			file: "prod/kustomization.yaml", old: "- ../flags-debug\n- ../proxy\ntransformers:\n- confighash.yaml\n",
			new:   "- ../confighash\n- ../flags-debug\n- ../proxy\n",
			stale: map[string]string{"Deployment/shop/prod-web-eu": "Deployment shop/prod-web-eu"},
			hint:  "or the one that uses a component listing it"},
		{name: "namespace and prefix transformers listed after the function", tree: "transformer-order", build: ".",
			file: "kustomization.yaml", old: "- namespace.yaml\n- prefix.yaml\n- confighash.yaml\n",
			new:   "- confighash.yaml\n- namespace.yaml\n- prefix.yaml\n",
			stale: map[string]string{"Deployment/shop/eu-web-v2": "Deployment shop/eu-web-v2"}},
		{name: "CRD without a nameReference configuration", tree: "crd-workload", build: ".",
			file: "kustomization.yaml", old: "configurations:\n- nameref.yaml\n", new: "",
			stale:      map[string]string{"CloneSet//prod-shop": "CloneSet prod-shop"},
			hint:       "nameReference configuration",
			verifyArgs: []string{"--workload", "CloneSet.apps.kruise.io=spec/template"}},
		{name: "CRD whose nameReference configuration lacks the field its pods read through", tree: "crd-workload", build: ".",
			file: "nameref.yaml", old: "  - {kind: CloneSet, group: apps.kruise.io, path: spec/template/spec/containers/envFrom/configMapRef/name}\n", new: "",
			stale:      map[string]string{"CloneSet//prod-shop": "CloneSet prod-shop"},
			hint:       "nameReference configuration",
			verifyArgs: []string{"--workload", "CloneSet.apps.kruise.io=spec/template"}},
		{name: "Argo Rollout, OpenShift DeploymentConfig and ReplicationController without a nameReference configuration", tree: "nameref-kinds", build: ".",
			file: "kustomization.yaml", old: "configurations:\n- nameref.yaml\n", new: "",
			stale: map[string]string{
				"Rollout//prod-shop": "Rollout prod-shop", "DeploymentConfig//prod-legacy": "DeploymentConfig prod-legacy",
				"ReplicationController//prod-old": "ReplicationController prod-old",
			},
			hint: "nameReference configuration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, filepath.Join("..", "testdata", "kustomize", tc.tree))
			edit(t, filepath.Join(dir, tc.file), tc.old, tc.new)
			out := kustomizeBuild(t, filepath.Join(dir, tc.build))
			got := independentHashes(t, out)
			verify := testtools.Run(t, dir, nil, []byte(out), testtools.Tool(t, "confighash"), append([]string{"verify"}, tc.verifyArgs...)...)
			assert.Equal(t, 1, verify.ExitCode)
			for workload, stale := range tc.stale {
				r := got[workload]
				require.NotEmpty(t, r.hash, "%s got a hash\n%s", workload, out)
				assert.NotEqual(t, r.want, r.hash, "%s: the function hashed objects kustomize changed, or names it kept, after it", workload)
				assert.Contains(t, verify.Stderr, stale)
			}
			if tc.hint != "" {
				assert.Contains(t, verify.Stderr, tc.hint)
			}
		})
	}
}

// TestKustomizeMessages: what confighash says through kustomize build when
// something is off, and that a secret value is never in it.
func TestKustomizeMessages(t *testing.T) {
	for _, tc := range []struct {
		name           string
		file, old, new string
		fails          bool
		want, notWant  []string
	}{
		// Listed under generators: instead of transformers:, confighash
		// gets from kustomize no resources, only its own functionConfig,
		// and has nothing to hash. The build still succeeds (as kustomize
		// runs it, it is not wrong input), but confighash says why no
		// workload got a hash and what to write instead.
		{name: "the function as a generator", file: "kustomization.yaml", old: "transformers:\n", new: "generators:\n",
			want: []string{"listed under generators:", "list it under transformers:"}, notWant: []string{"s3cr3t"}},
		// An error in a resource names the object and the field. The line
		// of the ResourceList kustomize piped to the function is in no
		// file the user has (kustomize writes every resource anew, keys
		// sorted, with its own annotations), so no line is named: before,
		// "line 39" for a field on line 16 of deployment.yaml.
		{name: "an error in a resource names no hidden line", file: "deployment.yaml",
			old: "        envFrom:\n        - configMapRef: {name: cfg}\n", new: "        envFrom: 5\n", fails: true,
			want: []string{"Deployment prod-web", "spec.template.spec: containers[0].envFrom: expected a list"}, notWant: []string{"line ", "s3cr3t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := kustomizeRun(t, editedTree(t, "prefix", tc.file, tc.old, tc.new))
			if tc.fails {
				require.NotZero(t, res.ExitCode, res.Stdout)
				assert.Empty(t, res.Stdout)
			} else {
				require.Zero(t, res.ExitCode, res.Stderr)
				assert.NotContains(t, res.Stdout, "confighash.dev/")
			}
			for _, w := range tc.want {
				assert.Contains(t, res.Stderr, w)
			}
			for _, w := range tc.notWant {
				assert.NotContains(t, res.Stderr, w)
			}
		})
	}
}
