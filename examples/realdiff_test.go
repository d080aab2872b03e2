package examples_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/kio"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// A later version of modules realcharts_test.go and realtrees_test.go pin,
// one GOTOOLCHAIN=local downloads.
const (
	kyvernoNext = "github.com/kyverno/kyverno@v1.18.2"
	kueueNext   = "sigs.k8s.io/kueue@v0.14.0"
	argoCDNext  = "github.com/argoproj/argo-cd/v2@v2.14.11"
)

// diffSide renders one side of a diff row.
type diffSide func(t *testing.T) string

// realDiffRow is two renders of one project, as a user upgrades it or
// changes a value, and what diff must say of them besides what the
// independent computation says.
type realDiffRow struct {
	name string
	// namespace is diff's --namespace: Helm's release namespace, none for
	// kustomize trees.
	namespace string
	old, new  diffSide
	// rolls, added and removed are the workloads (as diff names them) that
	// roll, are new and are removed; the independent computation must
	// find them too.
	rolls, added, removed []string
	// canaries are Secret values of the renders that no output may print.
	canaries []string
}

// kyvernoDiffValues are kyvernoValues with a password no output may print.
var kyvernoDiffValues = strings.Replace(kyvernoValues, "password: first", "password: x9-canary-kyverno", 1)

// ingressDiffValues are ingressValues with a proxy-body-size, the key
// nobody reads that a row changes.
var ingressDiffValues = strings.Replace(ingressValues, "  config:\n", "  config:\n    proxy-body-size: 1m\n", 1)

// katibDiffOverlay is an overlay of ours over katib's external-db install:
// a secretGenerator (hash suffix) merged into the one the db-manager reads
// by key, with a key nobody reads.
const katibDiffOverlay = `namespace: ml
resources:
- ../installs/katib-external-db
secretGenerator:
- name: katib-mysql-secrets
  behavior: merge
  literals:
  - DB_PASSWORD=x9-canary-first
  - UNREAD=one
`

// The charts of the rows.
var (
	kyvernoChart     = chartIn{kyverno, "charts/kyverno"}
	kyvernoNextChart = chartIn{kyvernoNext, "charts/kyverno"}
	ingressChart     = chartIn{ingressNginx, "charts/ingress-nginx"}
	deschedulerChart = chartIn{descheduler, "charts/descheduler"}
)

var (
	kyvernoRolls = append(slices.Clone(kyvernoControllerIDs), "Job shop/web-kyverno-migrate-resources", "Job shop/web-kyverno-scale-to-zero")
	// kyvernoControllerIDs and kyvernoHookIDs are kyvernoControllers and
	// kyvernoHooks as diff names them; kyvernoPodIDs both.
	kyvernoControllerIDs = diffIDs(kyvernoControllers)
	kyvernoHookIDs       = diffIDs(kyvernoHooks)
	kyvernoPodIDs        = slices.Concat(kyvernoControllerIDs, kyvernoHookIDs)
	argoCDHA             = []string{
		"Deployment argocd-applicationset-controller", "Deployment argocd-dex-server", "Deployment argocd-notifications-controller",
		"Deployment argocd-redis-ha-haproxy", "Deployment argocd-repo-server", "Deployment argocd-server",
		"StatefulSet argocd-application-controller", "StatefulSet argocd-redis-ha-server",
	}
)

var realDiffs = []realDiffRow{
	{
		// An upgrade across five minor versions: new images, args, labels,
		// mounts; a hook Job replaced by another, one renamed container.
		// 1.18's subcharts from other repositories are left empty (CRDs
		// only, or turned off by default).
		name: "kyverno chart v1.13.4 to v1.18.2", namespace: realNamespace,
		old:      helmSide(kyvernoChart, nil, kyvernoDiffValues),
		new:      helmSide(kyvernoNextChart, map[string]string{"kyverno-api": "0.0.1-alpha.2", "openreports": "0.1.0", "reports-server": "0.1.6"}, kyvernoDiffValues),
		rolls:    kyvernoRolls,
		added:    []string{"Job shop/web-kyverno-rm-webhooks"},
		removed:  []string{"Job shop/web-kyverno-clean-reports", "Job shop/web-kyverno-remove-configmap"},
		canaries: []string{"x9-canary-kyverno"},
	},
	{
		// A value every controller reads through a ConfigMap key.
		name: "kyverno chart: a value read through a ConfigMap", namespace: realNamespace,
		old:      helmSide(kyvernoChart, nil, kyvernoDiffValues),
		new:      helmSide(kyvernoChart, nil, kyvernoDiffValues, "--set", "metricsConfig.namespaces.exclude={kube-system}"),
		rolls:    kyvernoControllerIDs,
		canaries: []string{"x9-canary-kyverno"},
	},
	{
		// The image pull Secret's password: every pod pulls with it, the
		// hooks too (Helm 3 does not hash them: diff still says they roll).
		name: "kyverno chart: a Secret value", namespace: realNamespace,
		old:      helmSide(kyvernoChart, nil, kyvernoDiffValues),
		new:      helmSide(kyvernoChart, nil, kyvernoDiffValues, "--set", "imagePullSecrets.regcred.password=x9-canary-second"),
		rolls:    kyvernoPodIDs,
		canaries: []string{"x9-canary-kyverno", "x9-canary-second"},
	},
	{
		name: "ingress-nginx chart: a key the DaemonSet reads", namespace: realNamespace,
		old:   helmSide(ingressChart, nil, ingressDiffValues),
		new:   helmSide(ingressChart, nil, ingressDiffValues, "--set-string", "controller.config.use-gzip=false"),
		rolls: []string{"DaemonSet shop/web-ingress-nginx-controller"},
	},
	{
		name: "ingress-nginx chart: an image tag", namespace: realNamespace,
		old:   helmSide(ingressChart, nil, ingressDiffValues),
		new:   helmSide(ingressChart, nil, ingressDiffValues, "--set", "controller.image.tag=v1.11.9", "--set", "controller.image.digest="),
		rolls: []string{"DaemonSet shop/web-ingress-nginx-controller"},
	},
	{
		name: "ingress-nginx chart: an env literal", namespace: realNamespace,
		old: helmSide(ingressChart, nil, ingressDiffValues),
		new: helmSide(ingressChart, nil, ingressDiffValues, "--set-json",
			`controller.extraEnvs=[{"name":"USE_GZIP","valueFrom":{"configMapKeyRef":{"name":"web-ingress-nginx-controller","key":"use-gzip"}}},{"name":"TZ","value":"UTC"}]`),
		rolls: []string{"DaemonSet shop/web-ingress-nginx-controller"},
	},
	{
		name: "ingress-nginx chart: a key nobody reads", namespace: realNamespace,
		old: helmSide(ingressChart, nil, ingressDiffValues),
		new: helmSide(ingressChart, nil, ingressDiffValues, "--set-string", "controller.config.proxy-body-size=8m"),
	},
	{
		// Helm 3 to Helm 4: Helm 4 writes every document anew and hands
		// its post-renderer the hooks, which now carry a hash. They are
		// Jobs, whose hash is on the Job, not its pod template: nothing
		// rolls.
		name: "kyverno chart: Helm 3 to Helm 4", namespace: realNamespace,
		old:      helmSide(kyvernoChart, nil, kyvernoDiffValues),
		new:      helmVersionSide(4, kyvernoChart, nil, kyvernoDiffValues),
		canaries: []string{"x9-canary-kyverno"},
	},
	{
		// The pull Secret no longer rendered (kept in the cluster): it
		// leaves the render, and every pod that pulls with it rolls, the
		// Helm 3 hooks too.
		name: "kyverno chart: a Secret left out of the render", namespace: realNamespace,
		old:      helmSide(kyvernoChart, nil, kyvernoDiffValues),
		new:      helmSide(kyvernoChart, nil, kyvernoDiffValues, "--set", "imagePullSecrets=null"),
		rolls:    kyvernoPodIDs,
		canaries: []string{"x9-canary-kyverno"},
	},
	{
		// From vars:, patchesStrategicMerge and bases to replacements: and
		// patches; the webhook cert Secret is cert-manager's (external).
		name:  "cluster-api config/default v1.0.0 to v1.9.0",
		old:   treeSide(capiOld, "config", "default", nil),
		new:   treeSide(capiNew, "config", "default", nil),
		rolls: []string{"Deployment capi-system/capi-controller-manager"},
	},
	{
		// A CronJob whose policy ConfigMap changes; the chart's own
		// checksum/config annotation changes with it.
		name: "descheduler chart: a policy value", namespace: realNamespace,
		old:   helmSide(deschedulerChart, nil, ""),
		new:   helmSide(deschedulerChart, nil, "", "--set", "deschedulerPolicy.maxNoOfPodsToEvictPerNode=5"),
		rolls: []string{"CronJob shop/web-descheduler"},
	},
	{
		// The CronJob becomes a Deployment: one removed, one new.
		name: "descheduler chart: kind", namespace: realNamespace,
		old:     helmSide(deschedulerChart, nil, ""),
		new:     helmSide(deschedulerChart, nil, "kind: Deployment\n"),
		added:   []string{"Deployment shop/web-descheduler"},
		removed: []string{"CronJob shop/web-descheduler"},
	},
	{
		// kueue's manager config, webhook and metrics patches, images.
		name:  "kueue config/default v0.10.0 to v0.14.0",
		old:   treeSide(kueueModule, "config", "default", nil),
		new:   treeSide(kueueNext, "config", "default", nil),
		rolls: []string{"Deployment kueue-system/kueue-controller-manager"},
	},
	{
		// Eight workloads, new images and args; Secrets made at install
		// time stay external.
		name:  "argo-cd ha/namespace-install v2.13.3 to v2.14.11",
		old:   treeSide(argoCDModule, "manifests", "ha/namespace-install", nil),
		new:   treeSide(argoCDNext, "manifests", "ha/namespace-install", nil),
		rolls: argoCDHA,
	},
	{
		// Argo CD's install.yaml as shipped and applied (kubectl apply -f),
		// without confighash: diff says what it would roll.
		name: "argo-cd install.yaml v2.13.3 to v2.14.11, without confighash", namespace: "argocd",
		old: fileSide(argoCDModule, "manifests/install.yaml"),
		new: fileSide(argoCDNext, "manifests/install.yaml"),
		rolls: []string{
			"Deployment argocd/argocd-applicationset-controller", "Deployment argocd/argocd-dex-server", "Deployment argocd/argocd-notifications-controller",
			"Deployment argocd/argocd-redis", "Deployment argocd/argocd-repo-server", "Deployment argocd/argocd-server",
			"StatefulSet argocd/argocd-application-controller",
		},
	},
	{
		// A kustomize rename: the Secret's hash suffix changes with the
		// key the db-manager reads.
		name:     "katib overlay: a secretGenerator key read",
		old:      treeSide(katibModule, "manifests/v1beta1", "prod", map[string]string{"prod/kustomization.yaml": katibDiffOverlay}),
		new:      treeSide(katibModule, "manifests/v1beta1", "prod", map[string]string{"prod/kustomization.yaml": strings.Replace(katibDiffOverlay, "x9-canary-first", "x9-canary-second", 1)}),
		rolls:    []string{"Deployment ml/katib-db-manager"},
		canaries: []string{"x9-canary-first", "x9-canary-second"},
	},
	{
		// A rename by a key nobody reads: kustomize's new name rolls the
		// db-manager all the same.
		name:     "katib overlay: a secretGenerator key nobody reads",
		old:      treeSide(katibModule, "manifests/v1beta1", "prod", map[string]string{"prod/kustomization.yaml": katibDiffOverlay}),
		new:      treeSide(katibModule, "manifests/v1beta1", "prod", map[string]string{"prod/kustomization.yaml": strings.Replace(katibDiffOverlay, "UNREAD=one", "UNREAD=two", 1)}),
		rolls:    []string{"Deployment ml/katib-db-manager"},
		canaries: []string{"x9-canary-first"},
	},
}

// helmSide renders a chart of a module with Helm 3 and confighash as its
// post-renderer; stubs are subcharts of other repositories (name to
// version), written empty into charts/.
func helmSide(chart chartIn, stubs map[string]string, values string, args ...string) diffSide {
	return helmVersionSide(3, chart, stubs, values, args...)
}

// helmVersionSide is helmSide with Helm 3 or Helm 4 (confighash as its
// plugin).
func helmVersionSide(version int, chart chartIn, stubs map[string]string, values string, args ...string) diffSide {
	return func(t *testing.T) string {
		t.Helper()
		dir := realChartCopy(t, realChart{chart: chart})
		for name, v := range stubs {
			sub := filepath.Join(dir, "charts", name)
			require.NoError(t, os.MkdirAll(sub, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(sub, "Chart.yaml"), []byte("apiVersion: v2\nname: "+name+"\nversion: "+v+"\n"), 0o644))
		}
		file := filepath.Join(t.TempDir(), "values.yaml")
		require.NoError(t, os.WriteFile(file, []byte(values), 0o644))
		return realTemplate(t, realHelm(t, version), dir, true, append([]string{"--values", file}, args...)...)
	}
}

// treeSide builds a kustomization of a module with confighash last under
// its transformers; overlay are files written into the copy first.
func treeSide(module, root, build string, overlay map[string]string) diffSide {
	return func(t *testing.T) string {
		t.Helper()
		dir := moduleTree(t, module, root, overlay)
		addConfighash(t, filepath.Join(dir, build))
		out, _ := realBuild(t, filepath.Join(dir, build), nil, true)
		return out
	}
}

// fileSide is a manifest file of a module, as shipped.
func fileSide(module, path string) diffSide {
	return func(t *testing.T) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(testtools.ModuleDir(t, module), path))
		require.NoError(t, err)
		require.NotContains(t, string(b), "confighash.dev/")
		return string(b)
	}
}

// TestRealDiff runs confighash diff on two renders of real charts and
// kustomize trees (upgrades between versions a project shipped, and value
// changes) and checks it against a computation from the two renders alone:
// every workload whose pod template (confighash's annotations aside) or
// consumed content changes rolls and no other, the configs and keys and
// the template fields it names, new and removed workloads, kustomize
// renames paired, the counts, the exit codes, no Secret value printed; and
// that explain lists what each workload's pod spec consumes.
func TestRealDiff(t *testing.T) {
	t.Parallel()
	for _, tc := range realDiffs {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			oldFile, newFile := filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml")
			oldStream, newStream := tc.old(t), tc.new(t)
			require.NoError(t, os.WriteFile(oldFile, []byte(oldStream), 0o644))
			require.NoError(t, os.WriteFile(newFile, []byte(newStream), 0o644))
			old, cur := readDiffRender(t, oldStream, tc.namespace), readDiffRender(t, newStream, tc.namespace)
			want := expectDiff(old, cur)

			assert.Equal(t, sortedOrEmpty(tc.rolls), want.rolls(), "workloads whose pod template or consumed content changes, computed from the renders")
			assert.Equal(t, sortedOrEmpty(tc.added), want.ids(statusNew), "new workloads, computed from the renders")
			assert.Equal(t, sortedOrEmpty(tc.removed), want.ids(statusRemoved), "removed workloads, computed from the renders")

			confighash := testtools.Tool(t, "confighash")
			run := func(args ...string) testtools.Result {
				if tc.namespace != "" {
					args = append([]string{"--namespace", tc.namespace}, args...)
				}
				return testtools.Run(t, dir, nil, nil, confighash, append([]string{"diff"}, args...)...)
			}
			args := []string{oldFile, newFile}
			if tc.namespace != "" {
				args = append([]string{"--namespace", tc.namespace}, args...)
			}
			got, jsonRun := diffReport(t, dir, args, old, cur)

			text, md, exit := run(oldFile, newFile), run("--markdown", oldFile, newFile), run("--exit-code", oldFile, newFile)
			assert.Zero(t, text.ExitCode, text.Stderr)
			t.Logf("confighash diff:\n%s", text.Stdout)
			assert.Zero(t, md.ExitCode, md.Stderr)
			wantExit := 0
			if len(tc.rolls)+len(tc.added)+len(tc.removed) > 0 {
				wantExit = 1
			}
			assert.Equal(t, wantExit, exit.ExitCode, "diff --exit-code: %s", exit.Stderr)
			assert.Equal(t, text.Stdout, exit.Stdout, "--exit-code changes only the exit status")
			first, _, _ := strings.Cut(text.Stdout, "\n")
			assert.Equal(t, got.Summary, first, "the text's first line is the summary")
			assert.Contains(t, md.Stdout, strings.NewReplacer("_", `\_`, "*", `\*`).Replace(got.Summary))
			for _, w := range got.Workloads {
				if w.Status != statusUnchanged {
					assert.Contains(t, text.Stdout, "\n"+w.id()+" ", "the table has a line for %s", w.id())
				}
			}

			explain := testtools.Run(t, dir, nil, nil, confighash, explainArgs(tc.namespace, newFile)...)
			require.Zero(t, explain.ExitCode, explain.Stderr)
			checkExplain(t, explain.Stdout, cur)

			secrets := slices.Concat(secretTexts(t, oldStream, tc.namespace), secretTexts(t, newStream, tc.namespace))
			for _, c := range tc.canaries {
				assert.True(t, slices.ContainsFunc(secrets, func(s string) bool { return strings.Contains(s, c) }), "the canary %s is in a Secret of the renders", c)
				secrets = append(secrets, c)
			}
			for _, out := range []testtools.Result{jsonRun, text, md, exit, explain} {
				for _, s := range secrets {
					assert.NotContains(t, out.Stdout+out.Stderr, s, "a Secret value printed")
				}
			}
		})
	}
}

// diffReport runs confighash diff --json with args (its flags, OLD and NEW)
// in dir and checks the report against what the renders old and cur give:
// statuses, configs, keys and template fields, counts and summary
// (checkDiffJSON), and each hash against the one computed.
func diffReport(t *testing.T, dir string, args []string, old, cur diffRenderOf) (diffJSON, testtools.Result) {
	t.Helper()
	res := testtools.Run(t, dir, nil, nil, testtools.Tool(t, "confighash"), append([]string{"diff", "--json"}, args...)...)
	require.Zero(t, res.ExitCode, res.Stderr)
	var got diffJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	checkDiffJSON(t, got, expectDiff(old, cur))
	for _, w := range got.Workloads {
		assert.Empty(t, w.StaleHashes, "%s: the renders are hashed as diff hashes", w.id())
		if w.Status != statusNew {
			assert.Equal(t, old.workloads[w.id()].want, w.OldHash, "%s: the old render's hash, computed from the objects", w.id())
		}
		if w.Status != statusRemoved {
			assert.Equal(t, cur.workloads[w.id()].want, w.NewHash, "%s: the new render's hash, computed from the objects", w.id())
		}
	}
	return got, res
}

// base64Token is a run of base64 text long enough not to be a word.
var base64Token = regexp.MustCompile(`[A-Za-z0-9+/]{12,}={0,2}`)

// secretTexts returns the values of the Secrets of a render as written
// (base64) and decoded, and the decoded base64 runs inside them (a
// .dockerconfigjson's auth), those of 6 characters or more.
func secretTexts(t *testing.T, stream, namespace string) []string {
	t.Helper()
	var out []string
	add := func(s string) {
		if len(s) >= 6 {
			out = append(out, s)
		}
	}
	for _, c := range readSecrets(t, stream, namespace) {
		for _, v := range c.Data {
			add(base64.StdEncoding.EncodeToString(v))
			add(string(v))
			for _, tok := range base64Token.FindAllString(string(v), -1) {
				if b, err := base64.StdEncoding.DecodeString(tok); err == nil {
					add(string(b))
				}
			}
		}
	}
	return out
}

// readSecrets returns the Secrets of a render, typed.
func readSecrets(t *testing.T, stream, namespace string) []corev1.Secret {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(treeInputs(stream)))
	require.NoError(t, err)
	var out []corev1.Secret
	for _, n := range nodes {
		if n.GetKind() != "Secret" || n.GetApiVersion() != "v1" {
			continue
		}
		raw, err := n.MarshalJSON()
		require.NoError(t, err)
		var s corev1.Secret
		require.NoError(t, k8syaml.Unmarshal(raw, &s))
		for k, v := range s.StringData {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[k] = []byte(v)
		}
		out = append(out, s)
	}
	return out
}

func explainArgs(namespace, file string) []string {
	args := []string{"explain", "--json"}
	if namespace != "" {
		args = append(args, "--namespace", namespace)
	}
	return append(args, file)
}

// sortedOrEmpty returns ids sorted, an empty list for none.
func sortedOrEmpty(ids []string) []string {
	return append([]string{}, slices.Sorted(slices.Values(ids))...)
}

// The statuses of docs/diff.md's JSON schema.
const (
	statusRolls     = "rolls"
	statusUnchanged = "unchanged"
	statusNew       = "new"
	statusRemoved   = "removed"
)

// diffJSON is diff --json as docs/diff.md documents it.
type diffJSON struct {
	Summary                      string
	Total, Rolling, New, Removed int
	Workloads                    []diffWorkload
}

type diffWorkload struct {
	Kind, Namespace, Name string
	Status                string
	OldHash, NewHash      string
	StaleHashes           []any
	Configs               []diffConfig
	Template              []struct{ Path string }
	Reasons               []string
}

func (w diffWorkload) id() string { return workloadID(w.Kind, w.Namespace, w.Name) }

type diffConfig struct {
	Kind                    string `json:"kind"`
	Namespace               string `json:"namespace,omitempty"`
	Name                    string `json:"name"`
	OldName                 string `json:"oldName,omitempty"`
	Change                  string `json:"change"`
	Added, Removed, Changed []string
}

// workloadID names a workload as diff's table does: Kind namespace/name,
// or Kind name without a namespace.
func workloadID(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

// diffIDs names the workloads ids (Kind/namespace/name) as diff's table
// does.
func diffIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		parts := strings.SplitN(id, "/", 3)
		out[i] = workloadID(parts[0], parts[1], parts[2])
	}
	return out
}

// diffPodTemplates are where the workloads of these renders hold their pod
// templates.
var diffPodTemplates = map[string][]string{
	"Deployment": {"spec", "template"}, "StatefulSet": {"spec", "template"}, "DaemonSet": {"spec", "template"},
	"ReplicaSet": {"spec", "template"}, "Job": {"spec", "template"}, "Rollout": {"spec", "template"},
	"CronJob": {"spec", "jobTemplate", "spec", "template"},
}

// diffWorkloadOf is one workload of a render, read independently of
// confighash.
type diffWorkloadOf struct {
	namespace string
	// template is the pod template without confighash's annotations.
	template map[string]any
	uses     []hashing.Use
	// own are confighash's annotations on the pod template.
	own []string
	// hash is the render's confighash.dev/hash, want the one computed.
	hash, want string
}

// diffRenderOf is one render: its workloads by diff's name, its configs by
// Kind/namespace/name.
type diffRenderOf struct {
	workloads map[string]diffWorkloadOf
	configs   map[string]hashing.Content
}

// readDiffRender reads the configs and workloads of a render with typed
// reads and the hashing package; objects that name no namespace are in
// namespace (Helm's release namespace, or none).
func readDiffRender(t *testing.T, stream, namespace string) diffRenderOf {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(treeInputs(stream)))
	require.NoError(t, err)
	r := diffRenderOf{workloads: map[string]diffWorkloadOf{}}
	for _, n := range nodes {
		if n.GetNamespace() == "" && namespace != "" {
			require.NoError(t, n.SetNamespace(namespace))
		}
	}
	r.configs = independentConfigs(t, nodes)
	for _, n := range nodes {
		tpl, ok := testtools.PodTemplate(t, n, diffPodTemplates)
		if !ok {
			continue
		}
		w := diffWorkloadOf{namespace: n.GetNamespace(), hash: tpl.GetAnnotations()["confighash.dev/hash"]}
		for k := range tpl.GetAnnotations() {
			if strings.HasPrefix(k, "confighash.dev/") {
				w.own = append(w.own, k)
			}
		}
		slices.Sort(w.own)
		stripConfighash(t, tpl)
		w.template, err = tpl.Map()
		require.NoError(t, err)
		storeServiceAccount(mapOf(w.template["spec"]))
		spec := independentPodSpec(t, tpl)
		w.uses = hashing.Discover(&spec)
		lookup := func(kind hashing.Kind, name string) (hashing.Content, bool) {
			c, ok := r.configs[string(kind)+"/"+w.namespace+"/"+name]
			return c, ok
		}
		var inRender []hashing.Use
		for _, u := range w.uses {
			if _, ok := lookup(u.Kind, u.Name); ok {
				inRender = append(inRender, u)
			}
		}
		if len(inRender) > 0 {
			w.want = hashing.Compute(w.namespace, inRender, lookup, hashing.Options{})
		}
		r.workloads[workloadID(n.GetKind(), n.GetNamespace(), n.GetName())] = w
	}
	return r
}

// expectedDiff is, by workload, what diff must report.
type expectedDiff map[string]expectedWorkload

type expectedWorkload struct {
	status   string
	configs  []diffConfig
	template []string
}

func (e expectedDiff) ids(status string) []string {
	out := []string{}
	for id, w := range e {
		if w.status == status {
			out = append(out, id)
		}
	}
	return sortedOrEmpty(out)
}

func (e expectedDiff) rolls() []string { return e.ids(statusRolls) }

// expectDiff computes from two renders what diff must report: a workload
// in both rolls when its pod template (confighash's annotations aside)
// differs or the hash of what it consumes from the render does.
func expectDiff(old, cur diffRenderOf) expectedDiff {
	out := expectedDiff{}
	for id := range cur.workloads {
		if _, ok := old.workloads[id]; !ok {
			out[id] = expectedWorkload{status: statusNew}
		}
	}
	for id, ow := range old.workloads {
		w, ok := cur.workloads[id]
		if !ok {
			out[id] = expectedWorkload{status: statusRemoved}
			continue
		}
		configs, renames := expectConfigs(old, cur, ow, w)
		// One of confighash's annotations on one pod template only is a
		// change of it (confighash added to a pipeline, Helm 4 hashing
		// hooks Helm 3 never sent); a new value is the hash's.
		var own []string
		for _, k := range slices.Concat(ow.own, w.own) {
			if slices.Contains(ow.own, k) != slices.Contains(w.own, k) {
				own = append(own, "metadata.annotations["+k+"]")
			}
		}
		e := expectedWorkload{status: statusUnchanged, configs: configs,
			template: slices.Concat(own, templatePaths(ow.template, renamed(w.template, renames)))}
		if ow.want != w.want || len(own) > 0 || !reflect.DeepEqual(ow.template, w.template) {
			e.status = statusRolls
		}
		out[id] = e
	}
	return out
}

// expectConfigs lists the consumed configs whose consumed keys differ, that
// left or joined the render, or that kustomize renamed (a new hash suffix),
// and the renames, new name to old.
func expectConfigs(old, cur diffRenderOf, ow, w diffWorkloadOf) ([]diffConfig, map[string]string) {
	oldUses, newUses := usesOf(ow), usesOf(w)
	renames := map[string]string{}
	for ref, u := range newUses {
		if _, both := oldUses[ref]; both {
			continue
		}
		for oldRef, ou := range oldUses {
			if _, both := newUses[oldRef]; !both && ou.Kind == u.Kind && hashSuffixed(ou.Name, u.Name) {
				renames[ref] = oldRef
			}
		}
	}
	var out []diffConfig
	for ref, nu := range newUses {
		oldRef := ref
		if r, ok := renames[ref]; ok {
			oldRef = r
		}
		ou, ok := oldUses[oldRef]
		if !ok {
			continue
		}
		oc, inOld := old.configs[string(ou.Kind)+"/"+ow.namespace+"/"+ou.Name]
		nc, inNew := cur.configs[string(nu.Kind)+"/"+w.namespace+"/"+nu.Name]
		c := diffConfig{Kind: string(nu.Kind), Namespace: w.namespace, Name: nu.Name, Change: "keys"}
		switch {
		case !inOld && !inNew:
			// Outside both renders: the template names another object.
			delete(renames, ref)
			continue
		case inOld && !inNew:
			c.Change = "left-render"
			out = append(out, c)
			continue
		case !inOld && inNew:
			c.Change = "joined-render"
			out = append(out, c)
			continue
		}
		if oldRef != ref {
			c.Change, c.OldName = "renamed", ou.Name
		}
		keys := map[string]bool{}
		for _, u := range []hashing.Use{ou, nu} {
			for _, k := range u.Keys {
				keys[k] = true
			}
			if u.All {
				for k := range oc.Keys {
					keys[k] = true
				}
				for k := range nc.Keys {
					keys[k] = true
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			od, a := oc.Keys[k]
			nd, b := nc.Keys[k]
			switch {
			case a && b && od != nd:
				c.Changed = append(c.Changed, k)
			case b && !a:
				c.Added = append(c.Added, k)
			case a && !b:
				c.Removed = append(c.Removed, k)
			}
		}
		if len(c.Added)+len(c.Removed)+len(c.Changed) > 0 || c.Change == "renamed" {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b diffConfig) int { return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name) })
	return out, renames
}

// usesOf indexes a workload's uses by Kind/name.
func usesOf(w diffWorkloadOf) map[string]hashing.Use {
	out := map[string]hashing.Use{}
	for _, u := range w.uses {
		out[u.Ref()] = u
	}
	return out
}

// hashSuffixed tells whether two names are one name with two kustomize hash
// suffixes (a dash and ten characters).
func hashSuffixed(a, b string) bool {
	return len(a) == len(b) && len(a) > 11 && a[len(a)-11] == '-' && a[:len(a)-11] == b[:len(b)-11]
}

// renamed returns a template with the new names of renamed configs written
// as the old ones.
func renamed(tpl map[string]any, renames map[string]string) map[string]any {
	if len(renames) == 0 {
		return tpl
	}
	names := map[string]string{}
	for n, o := range renames {
		names[n[strings.IndexByte(n, '/')+1:]] = o[strings.IndexByte(o, '/')+1:]
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if o, ok := names[x]; ok {
				return o
			}
		case map[string]any:
			m := map[string]any{}
			for k, e := range x {
				m[k] = walk(e)
			}
			return m
		case []any:
			l := make([]any, len(x))
			for i, e := range x {
				l[i] = walk(e)
			}
			return l
		}
		return v
	}
	m, _ := walk(tpl).(map[string]any)
	return m
}

// templatePaths names the fields of two pod templates that differ as
// docs/diff.md writes them: labels and annotations by key, containers by
// name and field, volumes by name, other fields whole.
func templatePaths(old, cur map[string]any) []string {
	var out []string
	om, nm := mapOf(old["metadata"]), mapOf(cur["metadata"])
	for _, k := range differing(om, nm) {
		if k == "labels" || k == "annotations" {
			for _, key := range differing(mapOf(om[k]), mapOf(nm[k])) {
				out = append(out, fmt.Sprintf("metadata.%s[%s]", k, key))
			}
			continue
		}
		out = append(out, "metadata."+k)
	}
	oldSpec, curSpec := mapOf(old["spec"]), mapOf(cur["spec"])
	for _, k := range differing(oldSpec, curSpec) {
		switch k {
		case "containers", "initContainers", "ephemeralContainers", "volumes":
			ol, nl := byNameOf(oldSpec[k]), byNameOf(curSpec[k])
			for _, name := range differing(ol, nl) {
				o, inOld := ol[name]
				n, inNew := nl[name]
				if !inOld || !inNew || k == "volumes" {
					out = append(out, fmt.Sprintf("%s[%s]", k, name))
					continue
				}
				for _, f := range differing(mapOf(o), mapOf(n)) {
					out = append(out, fmt.Sprintf("%s[%s].%s", k, name, f))
				}
			}
		default:
			out = append(out, k)
		}
	}
	for _, k := range differing(old, cur) {
		if k != "metadata" && k != "spec" {
			out = append(out, k)
		}
	}
	return out
}

// storeServiceAccount writes a pod spec's service account under both its
// names, as the API server stores it (serviceAccount is the old name of
// serviceAccountName; kyverno 1.18 moved its hooks from one to the other).
func storeServiceAccount(spec map[string]any) {
	if spec["serviceAccountName"] == nil && spec["serviceAccount"] != nil {
		spec["serviceAccountName"] = spec["serviceAccount"]
	}
	if spec["serviceAccount"] == nil && spec["serviceAccountName"] != nil {
		spec["serviceAccount"] = spec["serviceAccountName"]
	}
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func byNameOf(v any) map[string]any {
	out := map[string]any{}
	l, _ := v.([]any)
	for _, it := range l {
		name, _ := mapOf(it)["name"].(string)
		out[name] = it
	}
	return out
}

// differing lists the keys whose values differ between a and b, sorted.
func differing(a, b map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
		for k := range a {
			yield(k, true)
		}
		for k := range b {
			yield(k, true)
		}
	}))) {
		if !reflect.DeepEqual(a[k], b[k]) {
			out = append(out, k)
		}
	}
	return out
}

// checkDiffJSON compares diff --json with what the renders give.
func checkDiffJSON(t *testing.T, got diffJSON, want expectedDiff) {
	t.Helper()
	ids := make([]string, 0, len(got.Workloads))
	counts := map[string]int{}
	for _, w := range got.Workloads {
		ids = append(ids, w.id())
		counts[w.Status]++
		e, ok := want[w.id()]
		if !assert.True(t, ok, "diff reports %s, in neither render", w.id()) {
			continue
		}
		assert.Equal(t, e.status, w.Status, "%s: status (reasons: %v)", w.id(), w.Reasons)
		if w.Status != statusRolls && w.Status != statusUnchanged {
			continue
		}
		configs := w.Configs
		slices.SortFunc(configs, func(a, b diffConfig) int { return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name) })
		assert.Equal(t, e.configs, configs, "%s: consumed configs that changed", w.id())
		var paths []string
		for _, f := range w.Template {
			paths = append(paths, f.Path)
		}
		assert.Equal(t, e.template, paths, "%s: pod template fields that changed", w.id())
		reasons := strings.Join(w.Reasons, "\n")
		for _, c := range e.configs {
			name := c.Kind + " " + workloadID("", c.Namespace, c.Name)[1:]
			if c.OldName != "" {
				name = c.Kind + " " + workloadID("", c.Namespace, c.OldName)[1:] + " renamed to " + c.Name
			}
			assert.Contains(t, reasons, name, "%s: a reason names the config", w.id())
			for _, k := range slices.Concat(c.Added, c.Removed, c.Changed) {
				assert.Contains(t, reasons, k, "%s: a reason names the key", w.id())
			}
		}
		for _, p := range e.template {
			assert.Contains(t, reasons, p, "%s: a reason names the field", w.id())
		}
		if w.Status == statusRolls {
			assert.NotEmpty(t, w.Reasons, "%s rolls without a reason", w.id())
		}
	}
	assert.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(slices.Values(ids)), "the workloads of both renders, each once")
	assert.Equal(t, len(want), got.Total, "total")
	assert.Equal(t, len(want.ids(statusRolls)), got.Rolling, "rolling")
	assert.Equal(t, len(want.ids(statusNew)), got.New, "new")
	assert.Equal(t, len(want.ids(statusRemoved)), got.Removed, "removed")
	assert.Equal(t, got.Total, counts[statusRolls]+counts[statusUnchanged]+counts[statusNew]+counts[statusRemoved], "the statuses add up to the total")
	noun := "workloads"
	if got.Total == 1 {
		noun = "workload"
	}
	assert.True(t, strings.HasPrefix(got.Summary, fmt.Sprintf("%d of %d %s ", got.Rolling, got.Total, noun)), "summary %q", got.Summary)
	for status, word := range map[string]string{statusNew: "new", statusRemoved: "removed"} {
		if n := len(want.ids(status)); n > 0 {
			assert.Contains(t, got.Summary, fmt.Sprintf("%d %s", n, word), "summary")
		}
	}
}

// checkExplain compares explain --json with the uses of each pod spec, and
// the render's hashes with the ones computed.
func checkExplain(t *testing.T, out string, r diffRenderOf) {
	t.Helper()
	var got []struct {
		Workload string
		Consumes []struct {
			Kind, Name                string
			Keys                      []string
			Whole, Optional, External bool
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	seen := []string{}
	for _, e := range got {
		seen = append(seen, e.Workload)
		w, ok := r.workloads[e.Workload]
		if !assert.True(t, ok, "explain lists %s, not a workload of the render", e.Workload) {
			continue
		}
		require.Len(t, e.Consumes, len(w.uses), "%s: what it consumes", e.Workload)
		for i, u := range w.uses {
			c := e.Consumes[i]
			_, inRender := r.configs[string(u.Kind)+"/"+w.namespace+"/"+u.Name]
			assert.Equal(t, []any{string(u.Kind), u.Name, u.Keys, u.All, u.Optional, !inRender},
				[]any{c.Kind, c.Name, c.Keys, c.Whole, c.Optional, c.External}, "%s: use %d", e.Workload, i)
		}
		if w.hash != "" {
			assert.Equal(t, w.want, w.hash, "%s: the render's hash is the one computed from the objects", e.Workload)
		}
	}
	assert.Equal(t, slices.Sorted(maps.Keys(r.workloads)), slices.Sorted(slices.Values(seen)), "explain lists every workload")
}
