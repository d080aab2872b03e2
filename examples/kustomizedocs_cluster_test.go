package examples_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/confighash/confighash/internal/status"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// docsEdit is an out-of-band edit of one key of a live config: config is
// Kind/namespace/name, the name kustomize gives it but its hash suffix,
// the namespace the tree's; readers are the workloads (Kind/namespace/name)
// whose pods read that key, as the tree says after kustomize's renames.
type docsEdit struct {
	config, key, value string
	readers            []string
}

// docsCluster is a row of docsTrees (by tree and build) applied to the
// control plane.
type docsCluster struct {
	tree, build string
	// src is the tree's folder when it is not testdata/kustomize/docs/<tree>.
	src string
	// into is the namespace the objects that name none are applied into:
	// "" for one of the test's own (kubectl apply -n), or default.
	into string
	// fnNamespace is the namespace written into the functionConfig
	// (namespace: default); workloads and moved then replace the
	// docsTrees row's external lists and, by a change's new text, the
	// workloads whose hash it moves.
	fnNamespace string
	workloads   map[string]string
	moved       map[string][]string
	// namespaces are the tree's namespaces; each is replaced in the tree
	// by one of the test's own before the build.
	namespaces []string
	// create are configs outside the render (Kind/namespace/name) a user
	// creates before applying, with their data.
	create map[string]map[string]string
	// external are, by a change's new text, the workloads the controller
	// rolls for it: the render changes a config they read as external.
	external map[string][]string
	// refused are the changes (by new text) of a config the API server
	// keeps as it is (immutable: true, no hash suffix): the apply fails
	// and the user takes the change back.
	refused []string
	edits   []docsEdit
}

var docsClusters = []docsCluster{
	{
		// Both Deployments read canary-settings, the plain ConfigMap the
		// canary renamed; settings, the base's, is read by nobody.
		tree: "canary", build: ".",
		edits: []docsEdit{
			{"ConfigMap//canary-app", "COLOR", "pink", []string{"Deployment//canary-web"}},
			{"Secret//db", "password", "edited", []string{"Deployment//web"}},
			{"ConfigMap//canary-settings", "app.properties", "timeout=1\n", []string{"Deployment//web", "Deployment//canary-web"}},
			{"ConfigMap//settings", "app.properties", "timeout=2\n", nil},
		},
	},
	{
		// reader names team-app, a name no object of the render has: the
		// user's config of that name.
		tree: "prefixedname", build: ".",
		create: map[string]map[string]string{"ConfigMap//team-app": {"GREETING": "from the user"}},
		edits: []docsEdit{
			{"ConfigMap//team-app", "GREETING", "edited", []string{"Deployment//reader"}},
			{"ConfigMap//canary-team-app", "GREETING", "edited", []string{"Deployment//canary-team-web"}},
			{"ConfigMap//settings", "MODE", "edited", []string{"Deployment//reader"}},
		},
	},
	{
		// Applied where kubectl apply -k puts what names no namespace when
		// the context names none: default, where explicit lives. Each
		// reads every config of the render, some as external.
		tree: "defaultnamespace", build: ".", into: "default",
		external: map[string][]string{
			"MODE: other": {"Deployment/default/eu-explicit"},
			"MODE: moved": {"Deployment//eu-implicit"},
		},
		edits: defaultNamespaceEdits,
	},
	{
		// The same with the functionConfig's namespace: default: every
		// config is in the reader's namespace, and the render's.
		tree: "defaultnamespace", build: ".", into: "default", fnNamespace: "default",
		workloads: map[string]string{"Deployment/default/eu-explicit": "", "Deployment//eu-implicit": ""},
		moved: map[string][]string{
			"LEVEL=debug": {"Deployment/default/eu-explicit", "Deployment//eu-implicit"},
			"MODE: other": {"Deployment/default/eu-explicit", "Deployment//eu-implicit"},
			"MODE: moved": {"Deployment/default/eu-explicit", "Deployment//eu-implicit"},
		},
		edits: defaultNamespaceEdits,
	},
	{
		// Prefix, suffix and namespace variants; ss and xx replace the
		// token Secret with the same content under two names.
		tree: "variants", build: ".", namespaces: []string{"fred"},
		edits: []docsEdit{
			{"ConfigMap//pp-env", "REGION", "edited", []string{"Deployment//pp-myapp"}},
			{"Secret//token-ss", "token.txt", "edited", []string{"Deployment//myapp-ss"}},
			{"Secret/fred/token-xx", "token.txt", "edited", []string{"Deployment/fred/myapp-xx"}},
			{"ConfigMap/fred/flags-xx", "foo", "edited", []string{"Deployment/fred/myapp-xx"}},
			{"ConfigMap//flags-ss", "bar", "edited", nil},
		},
	},
	{
		tree: "componentaffixes", build: ".",
		edits: []docsEdit{
			{"ConfigMap//blue-app-green", "COLOR", "edited", []string{"Deployment//blue-web-green"}},
			{"Secret//creds-green", "password", "edited", []string{"Deployment//web-green"}},
			{"ConfigMap//blue-settings-green", "web.conf", "workers=1\n", []string{"Deployment//blue-web-green"}},
			{"ConfigMap//settings-green", "unread.conf", "spare=maybe\n", nil},
		},
	},
	{
		tree: "multi-namespace", build: ".", namespaces: []string{"namespace-a", "namespace-b"},
		edits: []docsEdit{
			{"ConfigMap/namespace-a/settings", "default.conf", "server { listen 82; }\n", []string{"Deployment/namespace-a/myapp"}},
			{"ConfigMap/namespace-b/app", "LOG_LEVEL", "edited", []string{"Deployment/namespace-b/myapp"}},
		},
	},
	{
		// lonely, of no namespace, names shared: the user's config.
		tree: "namespacedgenerators", build: ".", namespaces: []string{"overlay", "team-a", "team-b"},
		create: map[string]map[string]string{"ConfigMap//shared": {"mode": "from the user"}},
		edits: []docsEdit{
			{"ConfigMap/overlay/testcase", "fruit", "edited", []string{"Deployment/overlay/web"}},
			{"ConfigMap/team-a/shared", "key", "edited", []string{"Deployment/team-a/reader"}},
			{"Secret/team-b/shared", "password", "edited", []string{"Deployment/team-b/reader"}},
			{"ConfigMap//shared", "mode", "edited", []string{"Deployment//lonely"}},
			{"ConfigMap//local", "mode", "edited", []string{"Deployment//lonely"}},
		},
	},
	{
		// The staging kustomization's generatorOptions make its configs
		// immutable, without hash suffix: the team's ssh Secret is the one
		// config that can change.
		tree: "generatorlevels", build: "staging",
		refused: []string{"fruit=pear", "y=3", "MODE=prod", "password=third", "REGION=us", "realm=home"},
		edits: []docsEdit{
			{"Secret//staging-team-ssh", "ssh-privatekey", "edited", []string{"Deployment//staging-team-web"}},
		},
	},
	{
		// The user's image pull Secret, external.
		tree: "wordpress", build: ".",
		create: map[string]map[string]string{"Secret//regcred": {".dockerconfigjson": "{}"}},
		edits: []docsEdit{
			{"Secret//demo-mysql-pass", "root-password", "edited", []string{"StatefulSet//demo-mysql"}},
			{"Secret//regcred", ".dockerconfigjson", `{"auths":{}}`, []string{"Deployment//demo-wordpress"}},
		},
	},
	{
		// Every generator immutable without hash suffix: the API server
		// refuses each change of data; one of their annotations changes.
		tree: "generatoroptions", build: ".",
		refused: []string{"foo=baz", "epoch=2", "token=def", "baz=quux"},
	},
	{
		tree: "binarydata", build: "overlay",
		edits: []docsEdit{
			{"ConfigMap//eu-p1-blob", "MODE", "edited", []string{"Deployment//eu-p1-worker"}},
			{"ConfigMap//eu-p1-blob", "notes.txt", "edited", nil},
		},
	},
	{
		tree: "literalvalues", build: "overlay",
		edits: []docsEdit{
			{"ConfigMap//lit-values", "FLAG", "edited", []string{"Deployment//lit-web", "Deployment//lit-reader"}},
			{"Secret//lit-secret-values", "ENABLED", "edited", []string{"Deployment//lit-web"}},
		},
	},
	{
		// web opts out: the controller leaves it alone.
		tree: "optout", build: "patch",
		edits: []docsEdit{
			{"ConfigMap//app", "LOG_LEVEL", "edited", []string{"Deployment//worker"}},
			{"Secret//db", "password", "edited", nil},
		},
	},
	{
		tree: "optout", build: "common",
		edits: []docsEdit{
			{"ConfigMap//app", "LOG_LEVEL", "edited", nil},
		},
	},
}

// docsClustersSlow are more docs trees, each passing as the rows above do;
// together they take about a minute more on two cores, so they run with
// CONFIGHASH_SLOW_TESTS=1, as .ci/run sets it.
var docsClustersSlow = []docsCluster{
	{
		// dev's and stag's app have one hash suffix and two names.
		tree: "multibases", build: ".",
		edits: []docsEdit{
			{"ConfigMap//cluster-a-dev-app", "LOG_LEVEL", "edited", []string{"Deployment//cluster-a-dev-myapp"}},
			{"ConfigMap//cluster-a-prod-settings", "default.conf", "server { listen 82; }\n", []string{"Deployment//cluster-a-prod-myapp"}},
		},
	},
	{
		tree: "configgeneration", build: "staging",
		edits: []docsEdit{
			{"ConfigMap//staging-the-map-v1", "altGreeting", "edited", []string{"Deployment//staging-hello-v1"}},
			{"ConfigMap//staging-the-map-v1", "motd", "edited", nil},
		},
	},
	{
		tree: "springboot", build: "staging",
		edits: []docsEdit{
			{"ConfigMap//staging-demo-configmap", "JAVA_OPTS", "edited", []string{"Deployment//staging-sbdemo"}},
			{"ConfigMap//staging-demo-configmap", "foo", "edited", nil},
			{"ConfigMap//staging-env-config", "config.env", "edited", nil},
		},
	},
	{
		tree: "generatorplugin", build: ".",
		edits: []docsEdit{
			{"ConfigMap//gen-app", "GREETING", "edited", []string{"Deployment//gen-web"}},
			{"Secret//gen-db", "password", "edited", []string{"Deployment//gen-web"}},
		},
	},
	{
		tree: "namechange", build: ".",
		edits: []docsEdit{
			{"ConfigMap//p-settings-v2", "app.properties", "timeout=1\n", []string{"Deployment//p-web"}},
			{"Secret//p-db", "password", "edited", []string{"Deployment//p-web"}},
		},
	},
	{
		tree: "patchmultipleobjects", build: ".", namespaces: []string{"hello"},
		edits: []docsEdit{
			{"Secret/hello/telemetry", "token", "edited", []string{"Deployment/hello/deploy1", "Deployment/hello/deploy2", "StatefulSet/hello/store"}},
			{"Secret/hello/telemetry", "unread", "edited", nil},
			{"ConfigMap/hello/mesh", "PROXY_PORT", "15002", []string{"Deployment/hello/deploy1", "Deployment/hello/deploy2"}},
		},
	},
	{
		tree: "replacements", build: ".",
		edits: []docsEdit{
			{"ConfigMap//eu-client", "API_HOST", "edited", []string{"Deployment//eu-frontend"}},
			{"ConfigMap//eu-client", "RETRIES", "5", nil},
			{"ConfigMap//eu-routes", "routes.yaml", "/v3", []string{"Deployment//eu-api"}},
		},
	},
	{
		tree: "reusedbase", build: ".",
		edits: []docsEdit{
			{"ConfigMap//overlay-team-b-app", "LEVEL", "edited", []string{"StatefulSet//overlay-team-b-store"}},
			{"Secret//overlay-team-a-creds", "password", "edited", []string{"Deployment//overlay-team-a-db"}},
		},
	},
	{
		tree: "intermediatenames", build: ".",
		edits: []docsEdit{
			{"Secret//project-zero-db-secret", "password", "edited", []string{"Deployment//project-app"}},
			{"Secret//project-one-db-secret", "password", "edited", []string{"Deployment//project-worker"}},
			{"Secret//project-one-db-secret", "arg", "edited", []string{"Deployment//project-app", "Deployment//project-worker"}},
			{"ConfigMap//project-right-bottom", "KEY", "edited", []string{"Deployment//project-right"}},
		},
	},
	{
		tree: "affixreferrer", build: ".",
		edits: []docsEdit{
			{"ConfigMap//db", "USER", "edited", []string{"Deployment//sync-handler"}},
			{"ConfigMap//b-example-config", "COLOR", "edited", []string{"Deployment//b-api"}},
			{"ConfigMap//a-example-config", "GREETING", "edited", []string{"Deployment//a-api"}},
		},
	},
	{
		// routing and blue hold names the replacements copied at build
		// time: nothing reads them at run time.
		tree: "replacementbase", build: "overlay",
		moved: map[string][]string{"cert=BBC": {"Deployment//eu-web-v1"}},
		edits: []docsEdit{
			{"Secret//eu-tls-a-v1", "cert", "edited", nil},
			{"Secret//eu-tls-b-v1", "cert", "edited", []string{"Deployment//eu-web-v1"}},
			{"ConfigMap//eu-red-v1", "shade", "edited", []string{"Deployment//eu-web-v1"}},
			{"ConfigMap//eu-blue-v1", "shade", "edited", nil},
			{"ConfigMap//eu-routing-v1", "secret", "tls-c", nil},
		},
	},
	{
		// edge, of no namespace, names cfg-a: the user's config.
		tree: "componentnamespace", build: ".", namespaces: []string{"prod"},
		create: map[string]map[string]string{"ConfigMap//cfg-a": {"UPSTREAM": "from the user"}},
		edits: []docsEdit{
			{"ConfigMap/prod/p-cfg-a", "UPSTREAM", "edited", []string{"Deployment/prod/p-proxy-a"}},
			{"ConfigMap//cfg-a", "UPSTREAM", "edited", []string{"Deployment//p-proxy-edge"}},
			{"ConfigMap//p-edge", "LISTEN", "edited", []string{"Deployment//p-proxy-edge"}},
		},
	},
}

// defaultNamespaceEdits are the edits of the defaultnamespace rows: each
// workload reads every config.
var defaultNamespaceEdits = []docsEdit{
	{"ConfigMap//eu-gen", "LEVEL", "edited", []string{"Deployment/default/eu-explicit", "Deployment//eu-implicit"}},
	{"ConfigMap//eu-plain", "MODE", "edited", []string{"Deployment/default/eu-explicit", "Deployment//eu-implicit"}},
	{"ConfigMap/default/eu-pinned", "MODE", "edited", []string{"Deployment/default/eu-explicit", "Deployment//eu-implicit"}},
}

// TestKustomizeDocsOnCluster renders rows of docsTrees with confighash, as
// TestKustomizeDocs does, and applies the ConfigMaps, Secrets and workloads
// of each render with server-side apply to the shared control plane, what
// names no namespace into one of the test's own (as kubectl apply -n does;
// or default, where a tree places objects there), each namespace the tree
// names replaced by one of the test's own, with bin/confighash-controller
// watching them. It checks, counting rollouts (a return to an earlier pod
// template too) and the controller's rolls:
//   - the first apply rolls nothing; kubectl confighash status reports
//     every workload current, reading as external what the row says;
//   - each change of the row, re-rendered and applied (one after the
//     other), rolls exactly the workloads whose hash it moves and those
//     whose references kustomize renamed, once; the controller rolls only
//     the readers of a config the render changes that they read as
//     external; status stays current. A change the API server refuses
//     (an immutable config) rolls nothing;
//   - an out-of-band edit of one key of a consumed config rolls exactly
//     the readers the row names, once each, by the controller, whose
//     Event on each names the config;
//   - the render re-applied writes back every edit of its configs: exactly
//     their readers roll once more; applied again, nothing rolls.
//
// The rows cover kustomize's renames (prefix and suffix variants, a
// canary, components, generators merged across levels and namespaces,
// namespace default next to none), opt-outs, immutable generators,
// binaryData, values YAML reads otherwise, a StatefulSet and an image pull
// Secret. crdvariants and transformerconfigs are left out: the controller
// manages no CRD kind but Argo Rollouts.
func TestKustomizeDocsOnCluster(t *testing.T) {
	cptest.Require(t)
	t.Parallel()
	run := func(t *testing.T, dc docsCluster) {
		i := slices.IndexFunc(docsTrees, func(r docsTree) bool { return r.tree == dc.tree && r.build == dc.build })
		require.GreaterOrEqual(t, i, 0, "no row %s/%s in docsTrees", dc.tree, dc.build)
		checkDocsOnCluster(t, dc, docsTrees[i])
	}
	name := func(dc docsCluster) string {
		if dc.fnNamespace != "" {
			return dc.tree + "/" + dc.build + " with the functionConfig's namespace " + dc.fnNamespace
		}
		return dc.tree + "/" + dc.build
	}
	rows := docsClusters
	if os.Getenv("CONFIGHASH_SLOW_TESTS") != "" {
		rows = append(slices.Clone(rows), docsClustersSlow...)
	} else {
		t.Logf("%d more trees run with CONFIGHASH_SLOW_TESTS=1", len(docsClustersSlow))
	}
	for _, dc := range rows {
		if dc.into == "" {
			t.Run(name(dc), func(t *testing.T) {
				t.Parallel()
				run(t, dc)
			})
		}
	}
	// The rows applied into default write the same names there: one
	// after the other.
	t.Run("into default", func(t *testing.T) {
		t.Parallel()
		for _, dc := range docsClusters {
			if dc.into != "" {
				t.Run(name(dc), func(t *testing.T) { run(t, dc) })
			}
		}
	})
}

// docsLive is a docs tree applied to the control plane: a cluster per
// namespace of the tree ("" for what names none), the controller watching
// them, and the workloads of the render (Kind/namespace/name, the tree's
// namespaces) it manages.
type docsLive struct {
	ns      map[string]*cluster
	ctrl    *controllerProc
	managed []string
	// applied are the objects (Kind/name) applied into default, which
	// the test deletes when it ends.
	applied map[string]bool
}

// checkDocsOnCluster runs a row as TestKustomizeDocsOnCluster says.
func checkDocsOnCluster(t *testing.T, dc docsCluster, tc docsTree) {
	d := &docsLive{ns: map[string]*cluster{}, applied: map[string]bool{}}
	var renames []string
	for _, ns := range dc.namespaces {
		c := newCluster(t, "docs-"+ns)
		d.ns[ns] = c
		renames = append(renames, "namespace: "+ns, "namespace: "+c.namespace)
	}
	if dc.into == "default" {
		c := inDefault(t)
		d.ns[""], d.ns["default"] = c, c
		t.Cleanup(func() { d.deleteApplied(t) })
	} else {
		d.ns[""] = newCluster(t, "docs-"+tc.tree)
	}
	src := dc.src
	if src == "" {
		src = filepath.Join("..", "testdata", "kustomize", "docs", tc.tree)
	}
	dir := copyTree(t, src)
	if len(renames) > 0 {
		r := strings.NewReplacer(renames...)
		renamed := t.TempDir()
		require.NoError(t, testtools.CopyTree(dir, renamed, func(_, _ string, b []byte) ([]byte, error) {
			return []byte(r.Replace(string(b))), nil
		}))
		dir = renamed
	}
	root := filepath.Join(dir, tc.build)
	if dc.fnNamespace != "" {
		fn := filepath.Join(root, "confighash.yaml")
		edit(t, fn, "kind: ConfigHash\n", "kind: ConfigHash\nnamespace: "+dc.fnNamespace+"\n")
	}
	if dc.workloads != nil {
		tc.workloads = dc.workloads
	}
	render := func() string {
		out, _ := realBuild(t, root, nil, true)
		return treeInputs(out)
	}
	for id, data := range dc.create {
		kind, c, name := d.resolve(id)
		c.createConfig(t, kind, name, data)
	}
	for id := range tc.workloads {
		if !slices.Contains(tc.optedOut, id) {
			d.managed = append(d.managed, id)
		}
	}
	slices.Sort(d.managed)
	workloads := slices.Sorted(maps.Keys(tc.workloads))
	d.ctrl = startController(t, "controller", strings.Join(d.namespaces(), ","), "--coalesce-window", "2s")

	// The first apply.
	out := render()
	d.apply(t, out)
	d.settled(t)
	last := d.status(t)
	assertCurrent(t, "after the first apply", last)
	for _, id := range d.managed {
		var external []string
		for _, cfg := range last[id].Configs {
			assert.True(t, cfg.Found, "%s: %s %s not found", id, cfg.Kind, cfg.Name)
			if cfg.External {
				external = append(external, cfg.Kind+"/"+cfg.Name)
			}
		}
		slices.Sort(external)
		assert.Equal(t, tc.workloads[id], strings.Join(external, ","), "%s: the configs status reads as external", id)
	}
	counts := d.counts(t, workloads)
	for id, n := range counts {
		assert.Equal(t, 1, n, "%s: pod templates after the first apply", id)
	}
	assert.Zero(t, d.ctrl.rolls(), "the controller rolled after the first apply")

	// Each change in git, re-rendered and applied.
	for _, ch := range tc.changes {
		what := ch.file + ": " + ch.new
		edit(t, filepath.Join(dir, ch.file), ch.old, ch.new)
		next := render()
		if slices.Contains(dc.refused, ch.new) {
			c := d.ns[""]
			err := kubetest.Apply(t.Context(), c.dyn, c.mapper, strings.NewReader(next), kubetest.ApplyOptions{Namespace: c.namespace, FieldManager: "gitops"})
			require.ErrorContains(t, err, "field is immutable", "%s: the apply", what)
			edit(t, filepath.Join(dir, ch.file), ch.new, ch.old)
			d.settled(t)
			assert.Equal(t, counts, d.counts(t, workloads), "%s: rollouts after the refused apply", what)
			assert.Zero(t, d.ctrl.rolls(), "%s: the controller rolled", what)
			continue
		}
		rolls := d.ctrl.rolls() + float64(len(dc.external[ch.new]))
		d.apply(t, next)
		d.ctrl.waitRolls(t, what+": the readers of external configs rolled", rolls)
		after := d.counts(t, workloads)
		d.settled(t)
		st := d.status(t)
		assertCurrent(t, what, st)
		var moved []string
		for id, w := range st {
			if w.RenderHash != last[id].RenderHash {
				moved = append(moved, id)
			}
		}
		if m, ok := dc.moved[ch.new]; ok {
			ch.moved = m
		}
		assert.ElementsMatch(t, ch.moved, moved, "%s: the workloads whose render-time hash moved", what)
		rolled := slices.Concat(ch.moved, dc.external[ch.new])
		for _, id := range d.templatesChanged(t, out, next) {
			if !slices.Contains(rolled, id) {
				rolled = append(rolled, id)
			}
		}
		assertReadersRolled(t, what, counts, after, rolled)
		assert.Equal(t, after, d.counts(t, workloads), "%s: rollouts after the controller saw it", what)
		assert.InDelta(t, rolls, d.ctrl.rolls(), 0, "%s: the controller's rolls", what)
		last, counts, out = st, after, next
	}

	// Out-of-band edits, one at a time. readers are the workloads that
	// read an edited key, true for those that read one the render holds.
	readers := map[string]bool{}
	for _, e := range dc.edits {
		what := "edit of " + e.config + " key " + e.key
		kind, c, name := d.resolve(e.config)
		if _, ok := dc.create[e.config]; !ok {
			name = liveName(t, d.inNamespace(t, out, c.namespace), kind, name)
		}
		events := d.ctrl.metric("confighash_config_events_total", `change="content"`)
		want := d.ctrl.rolls() + float64(len(e.readers))
		c.editConfig(t, clusterEdit{kind: kind, name: name, key: e.key, value: e.value})
		d.ctrl.waitFor(t, what+" seen", func(v float64) bool { return v > events }, "confighash_config_events_total", `change="content"`)
		d.ctrl.waitRolls(t, what+": the readers rolled", want)
		after := d.counts(t, workloads)
		d.settled(t)
		assert.InDelta(t, want, d.ctrl.rolls(), 0, "%s: the controller's rolls", what)
		assertReadersRolled(t, what, counts, after, e.readers)
		st := d.status(t)
		assertCurrent(t, what, st)
		_, user := dc.create[e.config]
		for _, id := range e.readers {
			readers[id] = readers[id] || !user
			require.NotNil(t, st[id].LastConfigChanged, "%s: %s has no ConfigChanged Event", what, id)
			assert.Contains(t, st[id].LastConfigChanged.Message, kind+" "+c.namespace+"/"+name+" key "+e.key+" changed", "%s: %s's Event", what, id)
		}
		counts = after
	}

	// The render re-applied writes back every edit but of the user's
	// configs.
	var rewritten []string
	for id, ok := range readers {
		if ok {
			rewritten = append(rewritten, id)
		}
	}
	want := d.ctrl.rolls() + float64(len(rewritten))
	d.apply(t, out)
	d.ctrl.waitRolls(t, "the written-back edits rolled", want)
	resynced := d.counts(t, workloads)
	d.settled(t)
	assertReadersRolled(t, "the render re-applied over the edits", counts, resynced, rewritten)
	d.apply(t, out)
	d.settled(t)
	assert.Equal(t, resynced, d.counts(t, workloads), "rollouts after the same render applied again")
	assert.InDelta(t, want, d.ctrl.rolls(), 0, "the controller's rolls")
	assertCurrent(t, "after the render re-applied", d.status(t))
}

// inDefault is a cluster of the shared control plane's default namespace.
func inDefault(t *testing.T) *cluster {
	t.Helper()
	cs, dyn, mapper := kubetest.Clients(t, cptest.Shared(t).RESTConfig())
	return &cluster{release: &release{namespace: metav1.NamespaceDefault, client: cs}, dyn: dyn, mapper: mapper}
}

// deleteApplied deletes the objects the test applied into default.
func (d *docsLive) deleteApplied(t *testing.T) {
	ctx := context.Background() // t.Context() is done when cleanups run
	c := d.ns[metav1.NamespaceDefault]
	for _, ref := range slices.Sorted(maps.Keys(d.applied)) {
		kind, name, _ := strings.Cut(ref, "/")
		var err error
		switch kind {
		case "Deployment":
			err = c.client.AppsV1().Deployments(c.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		case "ConfigMap":
			err = c.client.CoreV1().ConfigMaps(c.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		case "Secret":
			err = c.client.CoreV1().Secrets(c.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		default:
			t.Errorf("no delete for %s applied into default", ref)
		}
		assert.NoError(t, err, "deleting %s from default", ref)
	}
}

// resolve splits Kind/namespace/name into the kind, the cluster of the
// tree's namespace and the name.
func (d *docsLive) resolve(id string) (kind string, c *cluster, name string) {
	kind, rest, _ := strings.Cut(id, "/")
	ns, name, _ := strings.Cut(rest, "/")
	return kind, d.ns[ns], name
}

// namespaces are the live namespaces of the tree's.
func (d *docsLive) namespaces() []string {
	var out []string
	for _, c := range d.ns {
		if !slices.Contains(out, c.namespace) {
			out = append(out, c.namespace)
		}
	}
	slices.Sort(out)
	return out
}

// treeNamespace is the tree's namespace of a live one as a render writes it
// ("" and default stay as they are).
func (d *docsLive) treeNamespace(live string) string {
	for ns, c := range d.ns {
		if ns != "" && ns != metav1.NamespaceDefault && c.namespace == live {
			return ns
		}
	}
	return live
}

// inNamespace is the documents of a render that land in the live
// namespace.
func (d *docsLive) inNamespace(t *testing.T, render, live string) string {
	t.Helper()
	var b strings.Builder
	for _, doc := range testtools.Documents(render) {
		nodes, err := kio.FromBytes([]byte(doc))
		require.NoError(t, err)
		if len(nodes) != 1 {
			continue
		}
		if c := d.ns[d.treeNamespace(nodes[0].GetNamespace())]; c != nil && c.namespace == live {
			b.WriteString("---\n" + doc + "\n")
		}
	}
	return b.String()
}

// apply server-side applies a render, what names no namespace into the
// namespace the row gives.
func (d *docsLive) apply(t *testing.T, render string) {
	t.Helper()
	d.ns[""].apply(t, render)
	nodes, err := kio.FromBytes([]byte(render))
	require.NoError(t, err)
	for _, n := range nodes {
		if c := d.ns[n.GetNamespace()]; c != nil && c.namespace == metav1.NamespaceDefault {
			d.applied[n.GetKind()+"/"+n.GetName()] = true
		}
	}
}

// byCluster groups workloads (Kind/namespace/name) by the live namespace
// they are in, as Kind/name.
func (d *docsLive) byCluster(ids []string) map[*cluster][]string {
	out := map[*cluster][]string{}
	for _, id := range ids {
		kind, c, name := d.resolve(id)
		out[c] = append(out[c], kind+"/"+name)
	}
	return out
}

// counts are rollouts of the workloads, by Kind/namespace/name.
func (d *docsLive) counts(t *testing.T, workloads []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, id := range workloads {
		kind, c, name := d.resolve(id)
		out[id] = c.rollouts(t, []string{kind + "/" + name})[kind+"/"+name]
	}
	return out
}

// settled is settledAll in each namespace, of the workloads the
// controller manages.
func (d *docsLive) settled(t *testing.T) {
	t.Helper()
	for c, ids := range d.byCluster(d.managed) {
		d.ctrl.settledAll(t, c.release, ids)
	}
}

// status is kubectl confighash status of each namespace, by
// Kind/namespace/name; it fails unless status lists exactly the workloads
// the controller manages.
func (d *docsLive) status(t *testing.T) map[string]status.Workload {
	t.Helper()
	out := map[string]status.Workload{}
	listed := 0
	for _, live := range d.namespaces() {
		st := statusOf(t, live)
		listed += len(st)
		for _, id := range d.managed {
			kind, c, name := d.resolve(id)
			if w, ok := st[kind+"/"+name]; ok && c.namespace == live {
				out[id] = w
			}
		}
	}
	assert.Len(t, out, len(d.managed), "the workloads status lists")
	assert.Equal(t, len(d.managed), listed, "the workloads status lists in the namespaces")
	return out
}

// templatesChanged are the workloads (Kind/namespace/name, the tree's
// namespaces) whose pod templates differ between two renders apart from
// confighash's annotations: kustomize renamed a config they read.
func (d *docsLive) templatesChanged(t *testing.T, before, after string) []string {
	t.Helper()
	a, b := d.templates(t, before), d.templates(t, after)
	var out []string
	for id, tpl := range b {
		if a[id] != tpl {
			out = append(out, id)
		}
	}
	return out
}

// templates are the pod templates of a render but confighash's
// annotations, by Kind/namespace/name.
func (d *docsLive) templates(t *testing.T, render string) map[string]string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(withoutConfighash(t, render)))
	require.NoError(t, err)
	out := map[string]string{}
	for _, n := range nodes {
		if tpl, ok := testtools.PodTemplate(t, n, podTemplatePaths); ok {
			out[n.GetKind()+"/"+d.treeNamespace(n.GetNamespace())+"/"+n.GetName()] = tpl.MustString()
		}
	}
	return out
}
