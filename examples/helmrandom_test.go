package examples_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// randomChartsEnv names the seeds TestHelmRandomCharts runs (randomSeeds).
const randomChartsEnv = "CONFIGHASH_RANDOM_CHARTS"

// TestHelmRandomCharts renders seeded random charts with the real Helm 3
// and Helm 4 and confighash, and checks each as TestRealCharts checks the
// charts projects ship (checkRealRender: only confighash's annotations
// added, verify passes, every hash and external list is the one computed
// from the objects Helm sends, the KRM function and both Helms agree).
// The charts hold ConfigMaps and Secrets written the ways charts write them
// (quote, toYaml, block scalars, b64enc into data, stringData, binaryData),
// some of them hooks for various events, some naming the release namespace,
// some none and some another namespace, some in a subchart, some sharing a
// name with a config of the other kind or in another namespace;
// Deployments, StatefulSets, DaemonSets, CronJobs and Jobs (some of them
// hooks, some the subchart's, in the same namespaces) reading them through
// env, envFrom, volumes, projected sources and pull Secrets, optional or
// not, and reading configs the chart does not hold or holds only in another
// namespace; pod templates with labels, an empty metadata or Helm's
// checksum/config annotation. The workloads each Helm hashes must be
// the ones the generator's model says: Helm 3 sends no hooks; Helm 4 sends
// them all and counts a hook config only when Helm creates it on install
// and on upgrade (docs/helm.md). Then values are changed with --set, and
// exactly the workloads that read them must move; confighash diff of what
// Helm 3 sent must report what TestRealDiff's computation from the renders
// says, and name those and the workloads whose checksum/config moved, no
// other. Last, some of the documents Helm 3 sends are moved into a v1
// List, and each workload must keep its hash and external list
// (checkListed).
//
// A workload that is no hook reads no hook config Helm creates on install
// and on upgrade: Helm 3 leaves such a config out of what it sends, Helm 4
// does not, so the two Helms record different external lists for it, as
// docs/helm.md says, which checkRealRender would hold against them.
func TestHelmRandomCharts(t *testing.T) {
	t.Parallel()
	seeds := randomSeeds(t, randomChartsEnv, "1-16")
	var stats chartStats
	runSeeds(t, "charts", seeds, func(t *testing.T, seed uint64) {
		checkRandomChart(t, realHelm(t, 3), helmWithIdentity(t, 4), seed, &stats)
	})
	t.Logf("%d charts: %d configs (%d hooks, %d in another namespace, %d in the subchart), %d workloads (%d hooks, %d references to a name held only in another namespace); hashed by Helm 3: %d, by Helm 4: %d; %d value edits, %d of which moved a hash; %d with some documents moved into a List",
		len(seeds), stats.configs.Load(), stats.configHooks.Load(), stats.configsElsewhere.Load(), stats.configsSub.Load(), stats.workloads.Load(), stats.workloadHooks.Load(), stats.refsElsewhere.Load(),
		stats.hashed3.Load(), stats.hashed4.Load(), stats.edits.Load(), stats.moved.Load(), stats.listed.Load())
}

// chartStats counts what the charts held, for the log.
type chartStats struct {
	configs, configHooks, configsElsewhere, configsSub, refsElsewhere, workloads, workloadHooks, hashed3, hashed4, edits, moved, listed atomic.Int64
}

// checkRandomChart writes seed's chart, checks its renders and changes
// values in it (TestHelmRandomCharts).
func checkRandomChart(t *testing.T, h3, h4 testtools.Helm, seed uint64, stats *chartStats) {
	t.Helper()
	g := newChartGen(seed)
	g.generate()
	chart := filepath.Join(t.TempDir(), "random")
	writeTree(t, chart, g.files)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (%s=%d reruns it); the chart:\n%s", seed, randomChartsEnv, seed, g.dump())
		}
	})
	hashed3, hashed4, hooks := g.hashed()
	stats.configs.Add(int64(len(g.configs)))
	stats.workloads.Add(int64(len(g.workloads)))
	stats.refsElsewhere.Add(int64(g.refsElsewhere))
	for _, c := range g.configs {
		if c.hook != "" {
			stats.configHooks.Add(1)
		}
		if c.ns == nsOther {
			stats.configsElsewhere.Add(1)
		}
		if c.sub {
			stats.configsSub.Add(1)
		}
	}
	for _, w := range g.workloads {
		if w.hook {
			stats.workloadHooks.Add(1)
		}
	}
	stats.hashed3.Add(int64(len(hashed3)))
	stats.hashed4.Add(int64(len(hashed4)))

	base3, base4, before3, before4 := checkRealRender(t, h3, h4, chart, hashed3, hooks, nil, nil)
	if t.Failed() {
		return
	}
	sent3, sent4 := helmSends(t, before3, 3, false), helmSends(t, before4, 4, false)
	for _, i := range g.r.Perm(len(g.tokens))[:min(2, len(g.tokens))] {
		tok := g.tokens[i]
		set := []string{"--set", fmt.Sprintf("%s.%s=%sq", tok.path, tok.key, tok.value)}
		name := fmt.Sprintf("seed %d: %s", seed, strings.Join(set, " "))
		after3, after4 := realTemplate(t, h3, chart, true, set...), realTemplate(t, h4, chart, true, set...)
		sentAfter3 := helmSends(t, after3, 3, false)
		moved3 := readersOf(t, sent3, sentAfter3, tok.value)
		moved4 := readersOf(t, sent4, helmSends(t, after4, 4, false), tok.value)
		assertMoved(t, name+": helm3", namespaced(base3), namespaced(testtools.PodHashes(t, configsAndWorkloads(after3))), moved3)
		assertMoved(t, name+": helm4", namespaced(base4), namespaced(testtools.PodHashes(t, configsAndWorkloads(after4))), moved4)
		// confighash diff of what Helm 3 sent, against the report computed
		// from the two renders and against the model: the readers roll, and
		// the workloads whose checksum/config moved with the chart's configs.
		rolls := slices.Concat(moved3, g.checksummed(tok))
		assert.ElementsMatch(t, slices.Compact(slices.Sorted(slices.Values(rolls))),
			diffRolls(t, sent3, sentAfter3, realNamespace), "%s: helm3: confighash diff", name)
		stats.edits.Add(1)
		if len(moved3)+len(moved4) > 0 {
			stats.moved.Add(1)
		}
	}
	if checkListed(t, g.r, helmSends(t, realTemplate(t, h3, chart, false), 3, false)) {
		stats.listed.Add(1)
	}
}

// checkListed moves some of the documents of sent, what Helm 3 sends its
// post-renderer, into a v1 List at a random place among the others, as a
// template may write them, and checks that confighash gives each workload
// the hash and external list it gives it in sent (Helm 4 takes the items
// out of a List before its post-renderer runs). It reports whether it
// wrote a List.
func checkListed(t *testing.T, r *rand.Rand, sent string) bool {
	t.Helper()
	var items, rest []string
	for _, d := range testtools.Documents(sent) {
		if r.Float64() < 0.6 {
			items = append(items, d)
		} else {
			rest = append(rest, d)
		}
	}
	if len(items) == 0 {
		return false
	}
	at := r.IntN(len(rest) + 1)
	docs := slices.Insert(rest, at, strings.TrimSuffix(testtools.List(items...), "\n"))
	listed := "---\n" + strings.Join(docs, "\n---\n") + "\n"
	run := func(stream string) map[string]string {
		res := testtools.Run(t, "", nil, []byte(stream), testtools.Tool(t, "confighash"), "--namespace", realNamespace)
		require.Zero(t, res.ExitCode, "confighash: %s\n%s", res.Stderr, stream)
		return workloadRecords(t, res.Stdout)
	}
	assert.Equal(t, run(sent), run(listed), "each workload's hash and external list, with some documents in a List:\n%s", listed)
	return true
}

// diffRolls runs confighash diff --json from the render before to the one
// after (namespace: of the objects that name none; "" for none), checks its
// report against the one computed from the renders (diffReport), and
// returns the workloads it says roll, are new or removed, as
// Kind/namespace/name.
func diffRolls(t *testing.T, before, after, namespace string) []string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"old.yaml": before, "new.yaml": after})
	args := []string{"old.yaml", "new.yaml"}
	if namespace != "" {
		args = append([]string{"--namespace", namespace}, args...)
	}
	report, _ := diffReport(t, dir, args, readDiffRender(t, before, namespace), readDiffRender(t, after, namespace))
	var rolls []string
	for _, w := range report.Workloads {
		if w.Status != statusUnchanged {
			rolls = append(rolls, w.Kind+"/"+w.Namespace+"/"+w.Name)
		}
	}
	return rolls
}

// checksummed returns the workloads Helm 3 sends whose pod template holds
// Helm's checksum/config of the parent chart's configs, which an edit of
// tok changes (as Kind/namespace/name).
func (g *chartGen) checksummed(tok chartToken) []string {
	var out []string
	for _, w := range g.workloads {
		if w.checksum && !w.hook && !strings.HasPrefix(tok.path, "sub.") {
			out = append(out, w.kind+"/"+w.ns.namespace()+"/web-"+w.name)
		}
	}
	return out
}

// workloadRecords returns the hash and external list of each workload of a
// stream, List items included.
func workloadRecords(t *testing.T, stream string) map[string]string {
	t.Helper()
	objs := testtools.Objects(t, stream)
	hashes := testtools.TemplateHashes(slices.Collect(maps.Values(objs)))
	out := map[string]string{}
	for id, n := range objs {
		if _, ok := testtools.PodTemplate(t, n, hashedTemplatePaths); ok {
			out[id] = fmt.Sprintf("hash=%q external=%q", hashes[id], n.GetAnnotations()["confighash.dev/external"])
		}
	}
	return out
}

// chartGen writes one random chart.
type chartGen struct {
	r         *rand.Rand
	configs   []chartConfig
	workloads []chartWorkload
	// values are the config values, by config and key, as values.yaml
	// holds them under cfg.
	values map[string]map[string]string
	tokens []chartToken
	files  map[string]string
	// refsElsewhere counts the references to a name the chart holds only
	// in another namespace than the reader's.
	refsElsewhere int
}

// chartConfig is a ConfigMap or Secret of a random chart.
type chartConfig struct {
	// id is unique in the chart and keys the config's values; name, the
	// object's name after the release name, may be another config's in
	// another namespace or of the other kind.
	kind, id, name string
	keys           []string
	// hook is its helm.sh/hook annotation; "" for none.
	hook string
	ns   chartNamespace
	// sub says the config is the subchart's.
	sub bool
}

// chartWorkload is a workload of a random chart and the configs of the
// chart it reads (indices into chartGen.configs).
type chartWorkload struct {
	kind, name string
	hook, sub  bool
	// checksum says its pod template holds Helm's checksum/config.
	checksum bool
	ns       chartNamespace
	reads    []int
}

// chartNamespace is how an object of a random chart names its namespace:
// not at all, as the release's, or another one.
type chartNamespace int

const (
	nsNone chartNamespace = iota
	nsRelease
	nsOther
)

// otherNamespace is the namespace nsOther objects name.
const otherNamespace = "elsewhere"

// namespace is the namespace an object of ns is in once installed.
func (ns chartNamespace) namespace() string {
	if ns == nsOther {
		return otherNamespace
	}
	return realNamespace
}

// written is the namespace as PodHashes names it from helm template's
// output: "" where the template names none.
func (ns chartNamespace) written() string {
	if ns == nsNone {
		return ""
	}
	return ns.namespace()
}

// metadataLine is the template's namespace line, "" for none.
func (ns chartNamespace) metadataLine() string {
	switch ns {
	case nsRelease:
		return "  namespace: {{ .Release.Namespace }}\n"
	case nsOther:
		return "  namespace: " + otherNamespace + "\n"
	}
	return ""
}

// drawNamespace draws the namespace of an object: mostly the release's,
// written or not, at times another one.
func (g *chartGen) drawNamespace() chartNamespace {
	switch f := g.r.Float64(); {
	case f < 0.2:
		return nsOther
	case f < 0.6:
		return nsRelease
	}
	return nsNone
}

// chartToken is a value of values.yaml that a config holds, for an edit:
// --set path.key=….
type chartToken struct{ path, key, value string }

// chartHookEvents are the helm.sh/hook values a random config or workload
// takes: created on install and upgrade, or on one of them, or later.
var chartHookEvents = []string{"pre-install,pre-upgrade", "post-install,post-upgrade", "pre-install", "pre-upgrade", "post-install", "pre-install,pre-upgrade,pre-rollback"}

func newChartGen(seed uint64) *chartGen {
	return &chartGen{r: rand.New(rand.NewPCG(seed, 0xc4a27)), values: map[string]map[string]string{}, files: map[string]string{}}
}

func (g *chartGen) chance(p float64) bool { return g.r.Float64() < p }

// word returns a random value of ten letters, which no other value of the
// chart holds in practice (readersOf finds a value's readers by it).
func (g *chartGen) word() string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 10)
	for i := range b {
		b[i] = letters[g.r.IntN(len(letters))]
	}
	return string(b)
}

// generate writes the chart: its configs in one template, and some of them
// in one of a subchart's, each workload in one of its own (the parent's or
// the subchart's), and values.yaml (the subchart's values under sub).
func (g *chartGen) generate() {
	g.files["Chart.yaml"] = "apiVersion: v2\nname: random\nversion: 0.1.0\n"
	docs := map[bool][]string{}
	for i := range 1 + g.r.IntN(5) {
		c := chartConfig{kind: "ConfigMap", id: fmt.Sprintf("c%d", i), ns: g.drawNamespace(), sub: g.chance(0.25)}
		if g.chance(0.4) {
			c.kind = "Secret"
		}
		c.name = g.configName(c)
		if g.chance(0.25) {
			c.hook = chartHookEvents[g.r.IntN(len(chartHookEvents))]
		}
		c.keys = []string{"a", "b", "c"}[:2+g.r.IntN(2)]
		g.values[c.id] = map[string]string{}
		path := "cfg." + c.id
		if c.sub {
			path = "sub." + path
		}
		for _, k := range c.keys {
			v := g.word()
			g.values[c.id][k] = v
			if c.hook == "" || installAndUpgrade(c.hook) {
				g.tokens = append(g.tokens, chartToken{path, k, v})
			}
		}
		g.configs = append(g.configs, c)
		docs[c.sub] = append(docs[c.sub], g.configText(c))
	}
	g.files["templates/configs.yaml"] = g.configsText(docs[false])
	if len(docs[true]) > 0 {
		g.files["charts/sub/Chart.yaml"] = "apiVersion: v2\nname: sub\nversion: 0.2.0\n"
		g.files["charts/sub/templates/configs.yaml"] = g.configsText(docs[true])
	}
	for i := range 1 + g.r.IntN(3) {
		kinds := []string{"Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job"}
		w := chartWorkload{kind: kinds[g.r.IntN(len(kinds))], name: fmt.Sprintf("w%d", i), ns: g.drawNamespace()}
		w.hook = w.kind == "Job" && g.chance(0.5)
		w.sub = len(docs[true]) > 0 && g.chance(0.3)
		obj := g.workload(&w)
		out, err := k8syaml.Marshal(obj)
		if err != nil {
			panic(err)
		}
		g.workloads = append(g.workloads, w)
		dir := "templates/"
		if w.sub {
			dir = "charts/sub/templates/"
		}
		g.files[dir+w.name+".yaml"] = string(out)
	}
	values := map[string]any{"cfg": map[string]any{}, "sub": map[string]any{"cfg": map[string]any{}}}
	for _, c := range g.configs {
		at := values
		if c.sub {
			at = values["sub"].(map[string]any)
		}
		at["cfg"].(map[string]any)[c.id] = g.values[c.id]
	}
	v, err := json.Marshal(values)
	if err != nil {
		panic(err)
	}
	g.files["values.yaml"] = string(v) + "\n"
}

// configName draws the name of config c: its id, or now and then the name
// of a config of the chart in another namespace or of the other kind (no
// two configs share kind, namespace and name).
func (g *chartGen) configName(c chartConfig) string {
	if len(g.configs) == 0 || !g.chance(0.3) {
		return c.id
	}
	name := g.configs[g.r.IntN(len(g.configs))].name
	for _, o := range g.configs {
		if o.kind == c.kind && o.ns.namespace() == c.ns.namespace() && o.name == name {
			return c.id
		}
	}
	return name
}

// configsText is the template of a chart's configs, docs.
func (g *chartGen) configsText(docs []string) string {
	// Some charts start with a separator, leave empty documents or put a
	// comment before a document.
	sep := "---\n"
	text := ""
	if g.chance(0.3) {
		text = sep
	}
	for i, d := range docs {
		if i > 0 {
			text += sep
		}
		if g.chance(0.2) {
			text += "# rendered from values\n"
		}
		text += d
		if g.chance(0.15) {
			text += "---\n{{- if .Values.never }}\nkind: Nothing\n{{- end }}\n"
		}
	}
	return text
}

// configText is the template of one config.
func (g *chartGen) configText(c chartConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: %s\nmetadata:\n  name: {{ .Release.Name }}-%s\n", c.kind, c.name)
	b.WriteString(c.ns.metadataLine())
	b.WriteString("  labels:\n    app.kubernetes.io/instance: {{ .Release.Name }}\n")
	if c.hook != "" {
		fmt.Fprintf(&b, "  annotations:\n    helm.sh/hook: %s\n", c.hook)
	}
	value := func(k string) string { return fmt.Sprintf(".Values.cfg.%s.%s", c.id, k) }
	switch {
	case c.kind == "Secret" && g.chance(0.5):
		b.WriteString("type: Opaque\ndata:\n")
		for _, k := range c.keys {
			fmt.Fprintf(&b, "  %s: {{ %s | b64enc | quote }}\n", k, value(k))
		}
	case c.kind == "Secret":
		b.WriteString("stringData:\n")
		for _, k := range c.keys {
			fmt.Fprintf(&b, "  %s: {{ %s | quote }}\n", k, value(k))
		}
	case g.chance(0.3):
		fmt.Fprintf(&b, "data:\n  {{- toYaml .Values.cfg.%s | nindent 2 }}\n", c.id)
	default:
		b.WriteString("data:\n")
		for _, k := range c.keys {
			if g.chance(0.3) {
				fmt.Fprintf(&b, "  %s: |\n    {{ %s }}\n", k, value(k))
				continue
			}
			fmt.Fprintf(&b, "  %s: {{ %s | quote }}\n", k, value(k))
		}
	}
	if c.kind == "ConfigMap" && g.chance(0.2) {
		b.WriteString("binaryData:\n  blob: {{ \"fixed bytes\" | b64enc }}\n")
	}
	return b.String()
}

// readable reports whether workload w may read config c (see
// TestHelmRandomCharts on hook configs).
func readable(w chartWorkload, c chartConfig) bool {
	return w.hook || c.hook == "" || !installAndUpgrade(c.hook)
}

// ref returns the name a reference of w to a config of kind writes: one of
// the chart's in w's namespace it may read (recorded in w.reads) or, now
// and then, one the chart holds only in another namespace or not at all.
func (g *chartGen) ref(w *chartWorkload, kind string) string {
	var from, elsewhere []int
	for i, c := range g.configs {
		switch {
		case c.kind != kind:
		case c.ns.namespace() != w.ns.namespace():
			elsewhere = append(elsewhere, i)
		case readable(*w, c):
			from = append(from, i)
		}
	}
	if len(elsewhere) > 0 && g.chance(0.2) {
		name := g.configs[elsewhere[g.r.IntN(len(elsewhere))]].name
		if !slices.ContainsFunc(g.configs, func(c chartConfig) bool {
			return c.kind == kind && c.ns.namespace() == w.ns.namespace() && c.name == name
		}) {
			g.refsElsewhere++
			return "{{ .Release.Name }}-" + name
		}
	}
	if len(from) == 0 || g.chance(0.15) {
		return "{{ .Release.Name }}-outside"
	}
	i := from[g.r.IntN(len(from))]
	if !slices.Contains(w.reads, i) {
		w.reads = append(w.reads, i)
	}
	return "{{ .Release.Name }}-" + g.configs[i].name
}

// workload returns w's object, a template whose names Helm fills in.
func (g *chartGen) workload(w *chartWorkload) map[string]any {
	draws := podSpecDraws{
		r: g.r, keys: []string{"a", "b", "c"}, itemKeys: []string{"a", "b", "c", "blob"},
		config: func(secret bool) (string, string) {
			kind := "Secret"
			if !secret && g.chance(0.5) {
				kind = "ConfigMap"
			}
			return kind, g.ref(w, kind)
		},
		name: func(_, name, _ string) string { return name },
	}
	spec := draws.podSpec()
	labels := map[string]any{"app": w.name}
	var tmd map[string]any
	switch {
	case (w.kind == "Job" || w.kind == "CronJob") && g.chance(0.4):
		tmd = map[string]any{}
	case !w.sub && g.chance(0.2):
		w.checksum = true
		tmd = map[string]any{"labels": labels, "annotations": map[string]any{
			"checksum/config": `{{ include (print $.Template.BasePath "/configs.yaml") . | sha256sum }}`,
		}}
	}
	md := map[string]any{"name": "{{ .Release.Name }}-" + w.name}
	switch w.ns {
	case nsRelease:
		md["namespace"] = "{{ .Release.Namespace }}"
	case nsOther:
		md["namespace"] = otherNamespace
	}
	if w.hook {
		md["annotations"] = map[string]any{"helm.sh/hook": chartHookEvents[g.r.IntN(len(chartHookEvents))]}
	}
	return workloadObject(w.kind, w.name, md, labels, tmd, spec)
}

// hashed returns, by the generator's model, the workloads each Helm hashes
// (as testtools.PodHashes names them) and, of Helm 4's, the hooks: a
// workload is hashed when it reads a config of the chart that Helm sends
// and confighash counts; Helm 3 sends no hook; Helm 4 sends every one, and
// confighash counts a hook config only when Helm creates it on install and
// on upgrade.
func (g *chartGen) hashed() (helm3, helm4, hooks []string) {
	for _, w := range g.workloads {
		id := w.kind + "/" + w.ns.written() + "/web-" + w.name
		var sent3, sent4 bool
		for _, i := range w.reads {
			c := g.configs[i]
			sent3 = sent3 || c.hook == ""
			sent4 = sent4 || c.hook == "" || installAndUpgrade(c.hook)
		}
		if sent3 && !w.hook {
			helm3 = append(helm3, id)
		}
		if sent4 && w.hook {
			hooks = append(hooks, id)
		}
		if sent4 {
			helm4 = append(helm4, id)
		}
	}
	return helm3, helm4, hooks
}

// dump returns the chart's files, for a failing seed's log.
func (g *chartGen) dump() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(g.files)) {
		fmt.Fprintf(&b, "# %s\n%s\n", name, g.files[name])
	}
	return b.String()
}
