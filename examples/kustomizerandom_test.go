package examples_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/kio"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// randomTreesEnv names the seeds TestKustomizeRandomTrees runs: a range
// (1-500) or a comma-separated list (17,42); 1-50 when unset.
const randomTreesEnv = "CONFIGHASH_RANDOM_TREES"

// TestKustomizeRandomTrees builds seeded random kustomize trees (bases,
// overlays, components, a base listed twice under different prefixes,
// namespaces at random levels, generators merged and replaced across
// levels, plain configs, renaming patches, workloads (Deployments,
// StatefulSets, DaemonSets, CronJobs, Jobs) reading configs every way,
// replacements at random levels copying a config's name, whole or a
// part of it, into references a workload leaves for them or that they
// create, or renaming a config, patches selected by kind, label or name
// pattern adding references by a config's earlier names, configs and
// generators marked config.kubernetes.io/local-config, which kustomize
// drops from its output at the very end, plain configs encrypted with
// SOPS, whose readers record them as external) with confighash listed in the
// outermost kustomization, and takes kustomize's own render
// as the oracle: each pod spec's references are the final names. Objects, generators and an overlay's namespace write
// namespace: default next to objects that write none, which kustomize takes
// for one when it fixes a reference and the cluster does not; the
// functionConfig's namespace is default or none. A tree kustomize refuses
// is counted, not checked. Otherwise the render is the build without
// confighash but for its annotations, every workload's hash and external
// list are the ones computed from the objects its pod spec names in its own
// namespace (an object naming none is in the functionConfig's), verify
// passes, and an edited config value moves exactly the hashes of the
// workloads that read it in the render; confighash diff of the two renders
// reports what TestRealDiff's computation from the renders says and names
// every such reader.
func TestKustomizeRandomTrees(t *testing.T) {
	t.Parallel()
	seeds := randomSeeds(t, randomTreesEnv, "1-50")
	var stats randomStats
	runSeeds(t, "trees", seeds, func(t *testing.T, seed uint64) { checkRandomTree(t, seed, &stats) })
	t.Logf("%d trees: %d built and checked (%d writing namespace: default, %d with the functionConfig's namespace default), %d refused by kustomize; "+
		"%d workloads, %d hashed (%d of them Jobs), %d with an external list; %d value edits, %d of which moved a hash; "+
		"in the built trees %d references filled by replacements, %d created by replacements, %d configs renamed by one, %d patches by selector, %d local-config configs or generators, %d configs encrypted with SOPS",
		len(seeds), stats.built.Load(), stats.writeDefault.Load(), stats.fnDefault.Load(), stats.refused.Load(), stats.workloads.Load(),
		stats.hashed.Load(), stats.hashedJobs.Load(), stats.external.Load(), stats.edits.Load(), stats.moved.Load(),
		stats.filled.Load(), stats.created.Load(), stats.renamed.Load(), stats.selected.Load(), stats.local.Load(), stats.sops.Load())
	if !t.Failed() {
		assert.GreaterOrEqual(t, 2*stats.built.Load(), int64(len(seeds)), "most trees must be ones kustomize builds")
	}
}

// randomSeeds reads the seeds a random test runs from the environment
// variable env: a range (1-500) or a comma-separated list (17,42); def when
// it is unset.
func randomSeeds(t *testing.T, env, def string) []uint64 {
	t.Helper()
	spec := os.Getenv(env)
	if spec == "" {
		spec = def
	}
	var seeds []uint64
	for _, part := range strings.Split(spec, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		require.NoError(t, err, "%s=%s", env, spec)
		b := a
		if isRange {
			b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
			require.NoError(t, err, "%s=%s", env, spec)
		}
		for s := a; s <= b; s++ {
			seeds = append(seeds, s)
		}
	}
	return seeds
}

// runSeeds runs check for each seed, in parallel subtests of a subtest
// named group, and returns when all have run.
func runSeeds(t *testing.T, group string, seeds []uint64, check func(t *testing.T, seed uint64)) {
	t.Helper()
	t.Run(group, func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				t.Parallel()
				check(t, seed)
			})
		}
	})
}

// randomStats counts what the trees held, for the log.
type randomStats struct {
	built, refused, writeDefault, fnDefault, workloads, hashed, hashedJobs, external, edits, moved atomic.Int64
	// filled, created, renamed, selected, local and sops count what
	// genCounts counts.
	filled, created, renamed, selected, local, sops atomic.Int64
}

// checkRandomTree writes and checks the tree of one seed.
func checkRandomTree(t *testing.T, seed uint64, stats *randomStats) {
	t.Helper()
	g := newTreeGen(seed)
	g.generate()
	dir, plainDir := t.TempDir(), t.TempDir()
	bin := testtools.Tool(t, "confighash")
	g.write(t, dir, bin)
	g.write(t, plainDir, "/bin/cat")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (%s=%d reruns it); the tree:\n%s", seed, randomTreesEnv, seed, g.dump())
		}
	})
	kustomize := testtools.Tool(t, "kustomize")
	build := func(dir string) testtools.Result {
		return testtools.Run(t, dir, nil, nil, kustomize, "build", "--enable-alpha-plugins", "--enable-exec", ".")
	}
	plain := build(plainDir)
	res := build(dir)
	if plain.ExitCode != 0 {
		assert.NotZero(t, res.ExitCode, "seed %d: kustomize refuses the tree without confighash (%s), but builds it with it", seed, plain.Stderr)
		t.Logf("seed %d: kustomize refuses the tree: %s", seed, strings.TrimSpace(plain.Stderr))
		stats.refused.Add(1)
		return
	}
	stats.built.Add(1)
	stats.filled.Add(int64(g.counts.filled))
	stats.created.Add(int64(g.counts.created))
	stats.renamed.Add(int64(g.counts.renamed))
	stats.selected.Add(int64(g.counts.selected))
	stats.local.Add(int64(g.counts.local))
	stats.sops.Add(int64(g.counts.sops))
	if slices.ContainsFunc(slices.Collect(maps.Values(g.files)), func(text string) bool { return strings.Contains(text, "namespace: default\n") }) {
		stats.writeDefault.Add(1)
	}
	if g.fnNamespace != "" {
		stats.fnDefault.Add(1)
	}
	require.Zero(t, res.ExitCode, "seed %d: kustomize builds the tree without confighash, not with it\n%s", seed, res.Stderr)
	out := res.Stdout
	assert.Equal(t, withoutConfighash(t, plain.Stdout), withoutConfighash(t, out), "seed %d: only confighash's annotations added", seed)

	// The objects that name no namespace are where the functionConfig
	// puts them; each pod reads its own namespace.
	placed := func(stream string) string {
		if g.fnNamespace == "" {
			return stream
		}
		return inNamespace(t, stream, g.fnNamespace)
	}
	render := placed(out)
	got := independentHashes(t, render)
	require.NotEmpty(t, got, "seed %d: workloads in the render", seed)
	for id, r := range got {
		stats.workloads.Add(1)
		if r.want != "" {
			stats.hashed.Add(1)
			if strings.HasPrefix(id, "Job/") {
				stats.hashedJobs.Add(1)
			}
		}
		if r.wantExternal != "" {
			stats.external.Add(1)
		}
		assert.Equal(t, r.want, r.hash, "seed %d: %s: hash of what it reads, by the final names\n%s", seed, id, out)
		assert.Equal(t, r.wantExternal, r.external, "seed %d: %s: external annotation", seed, id)
	}
	verify := testtools.Run(t, dir, nil, []byte(out), testtools.Tool(t, "confighash"), "verify", "-namespace="+g.fnNamespace)
	assert.Zero(t, verify.ExitCode, "seed %d: confighash verify on the render\n%s", seed, verify.Stderr)

	hashes := testtools.PodHashes(t, render)
	for _, i := range g.r.Perm(len(g.tokens))[:min(2, len(g.tokens))] {
		tok := g.tokens[i]
		edit(t, filepath.Join(dir, tok.file), tok.value, tok.value+"q")
		changed := build(dir)
		require.Zero(t, changed.ExitCode, "seed %d: %s: %s edited\n%s", seed, tok.file, tok.value, changed.Stderr)
		name := fmt.Sprintf("seed %d: %s: %s edited", seed, tok.file, tok.value)
		after := placed(changed.Stdout)
		readers := readersOf(t, render, after, tok.value)
		assertMoved(t, name, hashes, testtools.PodHashes(t, after), readers)
		// confighash diff, against the report computed from the two
		// renders: every reader rolls (and so does a workload whose
		// references kustomize renamed, outside the render or not).
		rolls := diffRolls(t, render, after, g.fnNamespace)
		assert.Subset(t, rolls, readers, "%s: confighash diff", name)
		edit(t, filepath.Join(dir, tok.file), tok.value+"q", tok.value)
		stats.edits.Add(1)
		if len(readers) > 0 {
			stats.moved.Add(1)
		}
	}
}

// readersOf returns the workloads of the render before whose pod specs read
// a key whose value holds value, or any key of a config holding it whose
// name the edit changed (a kustomize hash suffix).
func readersOf(t *testing.T, before, after, value string) []string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(before))
	require.NoError(t, err)
	afterNames := map[string]bool{}
	for id := range configValues(t, after) {
		afterNames[id] = true
	}
	// holders maps Kind/namespace/name to the keys whose value holds it.
	holders := map[string][]string{}
	for id, data := range configValues(t, before) {
		for k, v := range data {
			if strings.Contains(v, value) {
				holders[id] = append(holders[id], k)
			}
		}
	}
	var readers []string
	for _, n := range nodes {
		tpl, ok := testtools.PodTemplate(t, n, hashedTemplatePaths)
		if !ok {
			continue
		}
		spec := independentPodSpec(t, tpl)
		for _, u := range hashing.Discover(&spec) {
			id := string(u.Kind) + "/" + n.GetNamespace() + "/" + u.Name
			keys, holds := holders[id]
			if holds && (u.All || !afterNames[id] || slices.ContainsFunc(keys, func(k string) bool { return slices.Contains(u.Keys, k) })) {
				readers = append(readers, n.GetKind()+"/"+n.GetNamespace()+"/"+n.GetName())
				break
			}
		}
	}
	return readers
}

// configValues reads the values of every ConfigMap and Secret of a render
// through the API types, by Kind/namespace/name and key.
func configValues(t *testing.T, out string) map[string]map[string]string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(out))
	require.NoError(t, err)
	values := map[string]map[string]string{}
	for _, n := range nodes {
		if n.Field("sops") != nil {
			continue // encrypted with SOPS: external, its values not the cluster's
		}
		raw, err := n.MarshalJSON()
		require.NoError(t, err)
		data := map[string]string{}
		switch n.GetKind() {
		case "ConfigMap":
			var cm corev1.ConfigMap
			require.NoError(t, k8syaml.Unmarshal(raw, &cm))
			maps.Copy(data, cm.Data)
		case "Secret":
			var s corev1.Secret
			require.NoError(t, k8syaml.Unmarshal(raw, &s))
			for k, v := range s.Data {
				data[k] = string(v)
			}
			maps.Copy(data, s.StringData)
		default:
			continue
		}
		values[n.GetKind()+"/"+n.GetNamespace()+"/"+n.GetName()] = data
	}
	return values
}

// treeGen writes one random kustomize tree.
type treeGen struct {
	r *rand.Rand
	// local draws which configs and generators are marked local-config,
	// and sops which plain configs are encrypted with SOPS, apart from r
	// so that the rest of a seed's tree does not depend on them.
	local, sops *rand.Rand
	seed        uint64
	// files are the tree's files by path, in writing order.
	files map[string]string
	order []string
	// tokens are the editable config values: each unique in the tree.
	tokens []valueToken
	n      int
	// fnNamespace is the functionConfig's namespace: default or none.
	fnNamespace string
	// slots are the references workloads leave to a replacement.
	slots  []replSlot
	counts genCounts
}

// genCounts counts, for the log, the replacements that fill a slot, those
// that create a reference, those that rename a config, the patches
// selecting workloads by kind, label or name pattern, the configs, config
// patches and generators marked local-config, and the configs encrypted
// with SOPS.
type genCounts struct{ filled, created, renamed, selected, local, sops int }

// replSlot is a reference a workload writes as REPLACED for a replacement
// to fill with a config's name: the field path in the workload, the kind
// of config it reads.
type replSlot struct {
	w          genWorkload
	kind, path string
	// filled by a level every copy of the workload passes through.
	filled bool
}

type valueToken struct{ file, value string }

// genConfig is a ConfigMap or Secret as a level sees it.
type genConfig struct {
	kind, name, namespace string
	// current is its name as the level leaves it (prefixes, suffixes, a
	// renaming patch; not the hash suffix).
	current   string
	generated bool
	// renamed configs are no longer found by name by later generators
	// and patches: renamed by a patch or a replacement, or built twice.
	renamed bool
	// names are every name it had, oldest first: kustomize finds it by
	// any of them.
	names []string
}

// rename gives c a new current name, kept among its names.
func (c *genConfig) rename(name string) {
	c.current = name
	if c.names[len(c.names)-1] != name {
		c.names = append(slices.Clip(c.names), name)
	}
}

// genWorkload is a workload as a level sees it.
type genWorkload struct {
	kind, name, namespace string
	// tier is its label tier (front, back or none), which patches and
	// replacements select by.
	tier string
}

// genLevel is what a kustomization's build holds.
type genLevel struct {
	dir       string
	configs   []genConfig
	workloads []genWorkload
}

var (
	configNames   = []string{"app", "db", "settings", "extra"}
	configKeys    = []string{"A", "B", "C", "conf.txt"}
	workloadNames = []string{"web", "api", "worker"}
	workloadKinds = []string{"Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job"}
)

func newTreeGen(seed uint64) *treeGen {
	return &treeGen{r: rand.New(rand.NewPCG(seed, 0x636f6e666967)), local: rand.New(rand.NewPCG(seed, 0x6c6f63616c)),
		sops: rand.New(rand.NewPCG(seed, 0x736f7073)), seed: seed, files: map[string]string{}}
}

func (g *treeGen) chance(p float64) bool { return g.r.Float64() < p }

// namespace returns the namespace an object writes: mostly none, else
// default (which kustomize takes for none when it fixes a reference, and
// the cluster does not) or one of its own.
func (g *treeGen) namespace() string {
	switch x := g.r.Float64(); {
	case x < 0.15:
		return "team"
	case x < 0.35:
		return "default"
	}
	return ""
}

// spelling returns ns, or at random the other way to write it when it is
// default or none: a generator merging into a config or a patch of an
// object names it either way, and kustomize finds it.
func (g *treeGen) spelling(ns string) string {
	if (ns == "" || ns == "default") && g.chance(0.3) {
		if ns == "" {
			return "default"
		}
		return ""
	}
	return ns
}

func pick[T any](g *treeGen, list []T) T { return list[g.r.IntN(len(list))] }

// value returns a new config value, unique in the tree and no part of
// another.
func (g *treeGen) value(file string) string {
	g.n++
	v := fmt.Sprintf("s%dv%dz", g.seed, g.n)
	g.tokens = append(g.tokens, valueToken{file: file, value: v})
	return v
}

func (g *treeGen) put(path string, doc any) {
	b, err := k8syaml.Marshal(doc)
	if err != nil {
		panic(err)
	}
	g.putText(path, string(b))
}

func (g *treeGen) putText(path, text string) {
	if _, ok := g.files[path]; !ok {
		g.order = append(g.order, path)
	}
	g.files[path] = text
}

// generate writes a base, 0–2 overlays over it, sometimes two variants of
// the top, and the root kustomization that lists confighash.
func (g *treeGen) generate() {
	lvl := g.base("base")
	for i := range g.r.IntN(3) {
		lvl = g.overlay(fmt.Sprintf("o%d", i+1), []genLevel{lvl}, false)
	}
	children := []genLevel{lvl}
	switch x := g.r.Float64(); {
	case x < 0.25:
		// The level as is next to a variant of itself.
		children = append(children, g.overlay("variant", children, true))
	case x < 0.45:
		children = []genLevel{g.overlay("left", children, true), g.overlay("right", children, true)}
	}
	g.overlay(".", children, false)
	if g.chance(0.3) {
		// Objects that name no namespace are then in default, as the
		// apply puts them without one.
		g.fnNamespace = "default"
	}
	g.putText("kustomization.yaml", g.files["kustomization.yaml"]+"transformers:\n- confighash.yaml\n")
}

// base writes a base: configs generated and plain, workloads reading them.
func (g *treeGen) base(dir string) genLevel {
	lvl := genLevel{dir: dir}
	kfile := dir + "/kustomization.yaml"
	k := map[string]any{}
	var resources []any
	var cmGen, secretGen []any
	for range 1 + g.r.IntN(3) {
		c := genConfig{kind: pick(g, []string{"ConfigMap", "Secret"}), name: pick(g, configNames), generated: g.chance(0.6)}
		c.current, c.names = c.name, []string{c.name}
		c.namespace = g.namespace()
		if slices.ContainsFunc(lvl.configs, func(o genConfig) bool { return o.kind == c.kind && o.name == c.name }) {
			continue
		}
		lvl.configs = append(lvl.configs, c)
		if c.generated {
			entry := g.generator(dir, kfile, c, "")
			if c.kind == "ConfigMap" {
				cmGen = append(cmGen, entry)
			} else {
				secretGen = append(secretGen, entry)
			}
			continue
		}
		file := strings.ToLower(c.kind) + "-" + c.name + ".yaml"
		resources = append(resources, file)
		g.put(dir+"/"+file, g.plainConfig(dir+"/"+file, c))
	}
	for _, name := range workloadNames[:1+g.r.IntN(2)] {
		w := genWorkload{kind: pick(g, workloadKinds), name: name, namespace: g.namespace(), tier: g.tier()}
		lvl.workloads = append(lvl.workloads, w)
		file := strings.ToLower(w.kind) + "-" + name + ".yaml"
		resources = append(resources, file)
		g.put(dir+"/"+file, g.workload(w, lvl.configs))
	}
	if g.chance(0.3) {
		repl, holders := g.replacements(dir, &lvl, true, true)
		resources = append(resources, holders...)
		if len(repl) > 0 {
			k["replacements"] = repl
		}
	}
	k["resources"] = resources
	if len(cmGen) > 0 {
		k["configMapGenerator"] = cmGen
	}
	if len(secretGen) > 0 {
		k["secretGenerator"] = secretGen
	}
	if g.chance(0.2) {
		k["generatorOptions"] = map[string]any{"disableNameSuffixHash": true}
	}
	g.put(kfile, k)
	return lvl
}

// generator returns a generator entry for c: literals, files or env files
// written into dir, sometimes its own options, a behavior when given.
func (g *treeGen) generator(dir, kfile string, c genConfig, behavior string) map[string]any {
	entry := map[string]any{"name": c.name}
	if behavior != "" {
		entry["behavior"] = behavior
	}
	ns := c.namespace
	if behavior != "" {
		ns = g.spelling(ns)
	}
	if ns != "" {
		entry["namespace"] = ns
	}
	keys := slices.Clone(configKeys[:3])
	g.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	keys = keys[:1+g.r.IntN(3)]
	var literals []any
	for i, key := range keys {
		switch {
		case i > 0 && g.chance(0.3):
			g.n++
			file := fmt.Sprintf("%s-%d.env", c.name, g.n)
			g.putText(dir+"/"+file, key+"="+g.value(dir+"/"+file)+"\n")
			entry["envs"] = []any{file}
		default:
			literals = append(literals, key+"="+g.value(kfile))
		}
	}
	if len(literals) > 0 {
		entry["literals"] = literals
	}
	if g.chance(0.3) {
		g.n++
		file := fmt.Sprintf("conf-%d.txt", g.n)
		g.putText(dir+"/"+file, "setting "+g.value(dir+"/"+file)+"\n")
		entry["files"] = []any{"conf.txt=" + file}
	}
	if g.chance(0.2) {
		entry["options"] = map[string]any{"disableNameSuffixHash": true}
	}
	if a := g.localConfig(); a != nil {
		opts, _ := entry["options"].(map[string]any)
		if opts == nil {
			opts = map[string]any{}
		}
		opts["annotations"] = a
		entry["options"] = opts
	}
	return entry
}

// localConfig returns, now and then, the annotations that mark an object
// config.kubernetes.io/local-config, in the spellings kustomize reads as
// such (any value but "false") and as "false", which it applies; nil
// otherwise.
func (g *treeGen) localConfig() map[string]any {
	if g.local.Float64() >= 0.1 {
		return nil
	}
	v := []string{"true", "true", "yes", "", "false"}[g.local.IntN(5)]
	if v != "false" {
		g.counts.local++
	}
	return map[string]any{"config.kubernetes.io/local-config": v}
}

// plainConfig returns a ConfigMap or Secret resource for c.
func (g *treeGen) plainConfig(file string, c genConfig) map[string]any {
	data := map[string]any{}
	for _, key := range configKeys[:1+g.r.IntN(3)] {
		data[key] = g.value(file)
	}
	md := map[string]any{"name": c.name}
	if c.namespace != "" {
		md["namespace"] = c.namespace
	}
	if a := g.localConfig(); a != nil {
		md["annotations"] = a
	}
	obj := map[string]any{"apiVersion": "v1", "kind": c.kind, "metadata": md}
	if g.sops.Float64() < 0.15 {
		// Encrypted with SOPS, as a Flux repository keeps it: each value
		// is ciphertext (an edit of its token is a new one), and the sops
		// field holds the metadata. confighash reads it as external.
		for k, v := range data {
			data[k] = "ENC[AES256_GCM,data:" + v.(string) + ",iv:aXY=,tag:dGFn,type:str]"
		}
		obj["sops"] = map[string]any{"mac": "ENC[AES256_GCM,data:bWFj,iv:aXY=,tag:dGFn,type:str]", "version": "3.9.0"}
		g.counts.sops++
	}
	if c.kind == "Secret" {
		obj["stringData"] = data
	} else {
		obj["data"] = data
	}
	return obj
}

// configRef picks a config for a workload to read: one of the level's
// mostly, else any name (made by an overlay, or nowhere).
func (g *treeGen) configRef(configs []genConfig) (kind, name string) {
	if len(configs) > 0 && g.chance(0.75) {
		c := pick(g, configs)
		switch x := g.r.Float64(); {
		case x < 0.25:
			return c.kind, c.current
		case x < 0.4:
			// A name it had at a level below.
			return c.kind, pick(g, c.names)
		}
		return c.kind, c.name
	}
	return pick(g, []string{"ConfigMap", "Secret"}), pick(g, append(slices.Clone(configNames), "ghost"))
}

// workload returns a workload whose pod spec reads configs in random ways,
// some by a name a replacement fills in (a slot).
func (g *treeGen) workload(w genWorkload, configs []genConfig) map[string]any {
	podSpec := podSpecPath(w.kind)
	draws := podSpecDraws{
		r: g.r, keys: configKeys[:3], itemKeys: configKeys,
		config: func(secret bool) (string, string) {
			if secret {
				return g.configRef(slices.DeleteFunc(slices.Clone(configs), func(c genConfig) bool { return c.kind != "Secret" }))
			}
			return g.configRef(configs)
		},
		// A reference writes cname, or REPLACED at path for a
		// replacement to fill (a slot).
		name: func(kind, cname, path string) string {
			if !g.chance(0.15) {
				return cname
			}
			g.slots = append(g.slots, replSlot{w: w, kind: kind, path: podSpec + "." + path})
			return "REPLACED"
		},
	}
	spec := draws.podSpec()
	labels := map[string]any{"app": w.name}
	md := map[string]any{"name": w.name}
	if w.namespace != "" {
		md["namespace"] = w.namespace
	}
	if w.tier != "" {
		md["labels"] = map[string]any{"tier": w.tier}
	}
	return workloadObject(w.kind, w.name, md, labels, nil, spec)
}

// podSpecPath is the path of a workload kind's pod spec, as replacements
// write it.
func podSpecPath(kind string) string {
	if kind == "CronJob" {
		return "spec.jobTemplate.spec.template.spec"
	}
	return "spec.template.spec"
}

// batchKind reports whether a workload kind is batch/v1's.
func batchKind(kind string) bool { return kind == "Job" || kind == "CronJob" }

// tier returns a workload's tier label: front, back or none.
func (g *treeGen) tier() string { return pick(g, []string{"front", "back", ""}) }

// overlay writes a kustomization over children: sometimes a name prefix
// (always when variant), suffix or namespace, generators merging into,
// replacing or adding to the children's, patches changing or renaming
// configs, a component.
func (g *treeGen) overlay(dir string, children []genLevel, variant bool) genLevel {
	lvl := genLevel{dir: dir}
	kfile := filepath.Join(dir, "kustomization.yaml")
	k := map[string]any{}
	var resources []any
	for _, c := range children {
		rel, err := filepath.Rel(dir, c.dir)
		if err != nil {
			panic(err)
		}
		resources = append(resources, rel)
		lvl.configs = append(lvl.configs, c.configs...)
		lvl.workloads = append(lvl.workloads, c.workloads...)
	}
	single := len(children) == 1
	if !single {
		// Two builds of one base: a name is no longer one config.
		for i := range lvl.configs {
			lvl.configs[i].renamed = true
		}
	}
	g.n++
	var prefix, suffix string
	// A variant's names differ from the level's by a prefix, a suffix or
	// both.
	variantPrefix := variant && g.chance(0.7)
	if variantPrefix || g.chance(0.35) {
		prefix = fmt.Sprintf("p%d-", g.n)
		k["namePrefix"] = prefix
	}
	if (variant && !variantPrefix) || g.chance(0.2) {
		suffix = fmt.Sprintf("-x%d", g.n)
		k["nameSuffix"] = suffix
	}
	if g.chance(0.15) {
		k["generatorOptions"] = map[string]any{"disableNameSuffixHash": g.chance(0.7), "labels": map[string]any{"level": strconv.Itoa(g.n)}}
	}
	var cmGen, secretGen []any
	for _, c := range lvl.configs {
		if !c.generated || c.renamed || !g.chance(0.35) {
			continue
		}
		entry := g.generator(dir, kfile, c, pick(g, []string{"merge", "replace"}))
		if c.kind == "ConfigMap" {
			cmGen = append(cmGen, entry)
		} else {
			secretGen = append(secretGen, entry)
		}
	}
	if g.chance(0.3) {
		c := genConfig{kind: pick(g, []string{"ConfigMap", "Secret"}), name: pick(g, configNames), generated: true}
		c.current, c.names = c.name, []string{c.name}
		c.namespace = g.namespace()
		// Not a name a child's config had: kustomize finds that one by any
		// of its names and refuses a second generator of it.
		if !slices.ContainsFunc(lvl.configs, func(o genConfig) bool { return o.kind == c.kind && o.name == c.name }) {
			entry := g.generator(dir, kfile, c, "")
			if c.kind == "ConfigMap" {
				cmGen = append(cmGen, entry)
			} else {
				secretGen = append(secretGen, entry)
			}
			lvl.configs = append(lvl.configs, c)
		}
	}
	if len(cmGen) > 0 {
		k["configMapGenerator"] = cmGen
	}
	if len(secretGen) > 0 {
		k["secretGenerator"] = secretGen
	}
	var patches []any
	for i, c := range lvl.configs {
		switch {
		case c.renamed:
		case !c.generated && g.chance(0.3):
			patched := c
			patched.namespace = g.spelling(c.namespace)
			b, err := k8syaml.Marshal(g.plainConfig(kfile, patched))
			if err != nil {
				panic(err)
			}
			patches = append(patches, map[string]any{"patch": string(b)})
		case g.chance(0.12):
			g.n++
			name := fmt.Sprintf("%s-r%d", c.name, g.n)
			patches = append(patches, map[string]any{
				"target":  map[string]any{"kind": c.kind, "name": c.name},
				"options": map[string]any{"allowNameChange": true},
				"patch":   "- op: replace\n  path: /metadata/name\n  value: " + name + "\n",
			})
			lvl.configs[i].renamed = true
			lvl.configs[i].rename(name)
		}
	}
	if single && len(lvl.workloads) > 0 && g.chance(0.2) {
		patches = append(patches, map[string]any{"patch": g.envPatch(pick(g, lvl.workloads), lvl.configs)})
	}
	for len(lvl.workloads) > 0 && g.chance(0.3) {
		patches = append(patches, g.selectorPatch(lvl))
	}
	if len(patches) > 0 {
		k["patches"] = patches
	}
	if g.chance(0.2) {
		g.n++
		comp := fmt.Sprintf("c%d", g.n)
		if dir != "." {
			comp = dir + "/" + comp
		}
		var workloads []genWorkload
		if single {
			workloads = lvl.workloads
		}
		g.component(comp, workloads, lvl.configs)
		rel, err := filepath.Rel(dir, comp)
		if err != nil {
			panic(err)
		}
		k["components"] = []any{rel}
	}
	if g.chance(0.3) {
		// A workload of this level: it may read a config by the name a
		// child's build gave it.
		w := genWorkload{kind: pick(g, workloadKinds), name: fmt.Sprintf("w%d", g.n), namespace: g.namespace(), tier: g.tier()}
		file := strings.ToLower(w.kind) + "-" + w.name + ".yaml"
		resources = append(resources, file)
		g.put(filepath.Join(dir, file), g.workload(w, lvl.configs))
		lvl.workloads = append(lvl.workloads, w)
	}
	for i := range lvl.configs {
		lvl.configs[i].rename(prefix + lvl.configs[i].current + suffix)
	}
	// Replacements run after the prefix, suffix and namespace: they read
	// the names as this level leaves them. The root fills every slot left.
	if dir == "." || g.chance(0.35) {
		// A variant's base is also listed as is.
		repl, holders := g.replacements(dir, &lvl, single, single && !variant)
		resources = append(resources, holders...)
		if len(repl) > 0 {
			k["replacements"] = repl
		}
	}
	k["resources"] = resources
	if g.chance(0.3) {
		ns := fmt.Sprintf("ns%d", g.n)
		if g.chance(0.3) {
			// Written on every object, next to the objects of other
			// levels that name none.
			ns = "default"
		}
		k["namespace"] = ns
		for i := range lvl.configs {
			lvl.configs[i].namespace = ns
		}
		for i := range lvl.workloads {
			lvl.workloads[i].namespace = ns
		}
	}
	g.put(kfile, k)
	return lvl
}

// replacements returns replacements for a level whose configs have the
// names its replacements see, and the files of the ConfigMaps they read
// new names from: some slots of its workloads filled (every one at the
// root; for good when everyCopy, every copy of the workload passing
// through the level), with a config's name or, through a delimiter, the
// part of it that is its generator's name; a volume or projected source
// created in the workloads a kind, label or name pattern selects; when
// single (one build of each config), a config renamed through its
// metadata.name.
func (g *treeGen) replacements(dir string, lvl *genLevel, single, everyCopy bool) (repl, holders []any) {
	root := dir == "."
	for i := range g.slots {
		s := &g.slots[i]
		if s.filled || !slices.ContainsFunc(lvl.workloads, func(w genWorkload) bool { return w.kind == s.w.kind && w.name == s.w.name }) ||
			!root && !g.chance(0.4) {
			continue
		}
		source, ok := g.replacementSource(lvl.configs, s.kind)
		if !ok {
			continue
		}
		target := map[string]any{"select": map[string]any{"kind": s.w.kind, "name": s.w.name}, "fieldPaths": []any{s.path}}
		if g.chance(0.2) {
			// REPLACED is one part: the name takes its place.
			target["options"] = map[string]any{"delimiter": "-", "index": 0}
		}
		repl = append(repl, map[string]any{"source": source, "targets": []any{target}})
		s.filled = everyCopy || root
		g.counts.filled++
	}
	for len(lvl.workloads) > 0 && g.chance(0.3) {
		w := pick(g, lvl.workloads)
		kind := pick(g, []string{"ConfigMap", "Secret"})
		source, ok := g.replacementSource(lvl.configs, kind)
		if !ok {
			break
		}
		g.n++
		field := fmt.Sprintf("%s.volumes.[name=r%d].", podSpecPath(w.kind), g.n)
		switch {
		case g.chance(0.3):
			field += "projected.sources.0." + refField(kind, "") + ".name"
		case kind == "Secret":
			field += "secret.secretName"
		default:
			field += "configMap.name"
		}
		options := map[string]any{"create": true}
		if g.chance(0.2) {
			options["delimiter"], options["index"] = "-", 0
		}
		target := map[string]any{"select": g.workloadSelector(w), "fieldPaths": []any{field}, "options": options}
		repl = append(repl, map[string]any{"source": source, "targets": []any{target}})
		g.counts.created++
	}
	if single && g.chance(0.15) {
		// A config renamed by a replacement keeps its earlier names, but
		// not the one the replacement replaced: kustomize records a
		// previous name when its own transformers rename.
		i := g.r.IntN(len(lvl.configs) + 1)
		if i == len(lvl.configs) || lvl.configs[i].renamed {
			return repl, holders
		}
		c := &lvl.configs[i]
		name, ok := g.selectorName(lvl.configs, i)
		if !ok {
			return repl, holders
		}
		g.n++
		holder, newName := fmt.Sprintf("names-%d", g.n), fmt.Sprintf("%s-n%d", c.name, g.n)
		g.put(filepath.Join(dir, holder+".yaml"), map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": holder}, "data": map[string]any{"name": newName},
		})
		holders = append(holders, holder+".yaml")
		repl = append(repl, map[string]any{
			"source":  map[string]any{"kind": "ConfigMap", "name": holder, "fieldPath": "data.name"},
			"targets": []any{map[string]any{"select": map[string]any{"kind": c.kind, "name": name}, "fieldPaths": []any{"metadata.name"}}},
		})
		c.renamed, c.current = true, newName
		c.names = append(slices.Clone(c.names[:len(c.names)-1]), newName)
		g.counts.renamed++
	}
	return repl, holders
}

// replacementSource returns a replacement's source: a config of kind,
// selected by a name no other config of the level had (kustomize refuses
// a source selector matching two), its metadata.name whole or, through a
// delimiter, one part of it, mostly its generator's name.
func (g *treeGen) replacementSource(configs []genConfig, kind string) (map[string]any, bool) {
	var candidates []int
	for i, c := range configs {
		if c.kind == kind {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		return nil, false
	}
	i := pick(g, candidates)
	name, ok := g.selectorName(configs, i)
	if !ok {
		return nil, false
	}
	source := map[string]any{"kind": kind, "name": name}
	if g.chance(0.3) {
		source["fieldPath"] = "metadata.name"
	}
	if parts := strings.Split(configs[i].current, "-"); len(parts) > 1 && g.chance(0.25) {
		index := slices.Index(parts, configs[i].name)
		if index < 0 || g.chance(0.2) {
			index = g.r.IntN(len(parts))
		}
		source["options"] = map[string]any{"delimiter": "-", "index": index}
	}
	return source, true
}

// selectorName returns a name configs[i] had that no other config of its
// kind had.
func (g *treeGen) selectorName(configs []genConfig, i int) (string, bool) {
	own := slices.DeleteFunc(slices.Clone(configs[i].names), func(name string) bool {
		for j, o := range configs {
			if j != i && o.kind == configs[i].kind && slices.Contains(o.names, name) {
				return true
			}
		}
		return false
	})
	if len(own) == 0 {
		return "", false
	}
	return pick(g, own), true
}

// workloadSelector returns a selector of the workloads of w's pod spec
// path: by kind, by kind and tier label, or by kind and a name pattern.
func (g *treeGen) workloadSelector(w genWorkload) map[string]any {
	kinds := "Deployment|StatefulSet|DaemonSet"
	if batchKind(w.kind) {
		kinds = w.kind
	}
	sel := map[string]any{"kind": kinds}
	switch x := g.r.Float64(); {
	case x < 0.4 && w.tier != "":
		sel["labelSelector"] = "tier=" + w.tier
	case x < 0.7:
		sel["name"] = ".*" + w.name + ".*"
	}
	return sel
}

// selectorPatch returns a patch whose target selects workloads by kind,
// label or name pattern: a JSON 6902 patch adding a sidecar, or a
// strategic merge patch adding a sidecar and a volume, that read configs
// by one of the names they had.
func (g *treeGen) selectorPatch(lvl genLevel) map[string]any {
	w := pick(g, lvl.workloads)
	target := g.workloadSelector(w)
	g.counts.selected++
	g.n++
	side := fmt.Sprintf("side%d", g.n)
	container := map[string]any{"name": side, "image": "example/side:1"}
	ref := func() (string, string) {
		if len(lvl.configs) == 0 || g.chance(0.1) {
			return pick(g, []string{"ConfigMap", "Secret"}), "ghost"
		}
		c := pick(g, lvl.configs)
		return c.kind, pick(g, c.names)
	}
	kind, name := ref()
	if g.chance(0.5) {
		container["envFrom"] = []any{map[string]any{refField(kind, "Ref"): map[string]any{"name": name}}}
	} else {
		container["env"] = []any{map[string]any{"name": "S", "valueFrom": map[string]any{
			refField(kind, "KeyRef"): map[string]any{"name": name, "key": pick(g, configKeys[:3])},
		}}}
	}
	podSpec := podSpecPath(w.kind)
	if g.chance(0.5) {
		ops := []any{map[string]any{"op": "add", "path": "/" + strings.ReplaceAll(podSpec, ".", "/") + "/containers/-", "value": container}}
		b, err := k8syaml.Marshal(ops)
		if err != nil {
			panic(err)
		}
		return map[string]any{"target": target, "patch": string(b)}
	}
	// A strategic merge patch takes its schema from its kind: one kind.
	target["kind"] = w.kind
	spec := map[string]any{"containers": []any{container}}
	kind, name = ref()
	vol := map[string]any{"name": side}
	if kind == "Secret" {
		vol["secret"] = map[string]any{"secretName": name}
	} else {
		vol["configMap"] = map[string]any{"name": name}
	}
	spec["volumes"] = []any{vol}
	var body any = map[string]any{"template": map[string]any{"spec": spec}}
	apiVersion := "apps/v1"
	if batchKind(w.kind) {
		apiVersion = "batch/v1"
	}
	if w.kind == "CronJob" {
		body = map[string]any{"jobTemplate": map[string]any{"spec": body}}
	}
	b, err := k8syaml.Marshal(map[string]any{"apiVersion": apiVersion, "kind": w.kind, "metadata": map[string]any{"name": "any"}, "spec": body})
	if err != nil {
		panic(err)
	}
	return map[string]any{"target": target, "patch": string(b)}
}

// envPatch is a strategic merge patch adding an env variable read from a
// config to a workload's main container.
func (g *treeGen) envPatch(w genWorkload, configs []genConfig) string {
	kind, cname := g.configRef(configs)
	container := map[string]any{"name": "main", "env": []any{map[string]any{
		"name": "PATCHED", "valueFrom": map[string]any{refField(kind, "KeyRef"): map[string]any{"name": cname, "key": pick(g, configKeys[:3])}},
	}}}
	template := map[string]any{"spec": map[string]any{"containers": []any{container}}}
	md := map[string]any{"name": w.name}
	if ns := g.spelling(w.namespace); ns != "" {
		md["namespace"] = ns
	}
	obj := map[string]any{"kind": w.kind, "metadata": md, "apiVersion": "apps/v1", "spec": map[string]any{"template": template}}
	if batchKind(w.kind) {
		obj["apiVersion"] = "batch/v1"
	}
	if w.kind == "CronJob" {
		obj["spec"] = map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": template}}}
	}
	b, err := k8syaml.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// component writes a Component that merges into or adds a generator and
// patches a workload to read a config.
func (g *treeGen) component(dir string, workloads []genWorkload, configs []genConfig) {
	kfile := dir + "/kustomization.yaml"
	k := map[string]any{"apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component"}
	generated := slices.DeleteFunc(slices.Clone(configs), func(c genConfig) bool { return !c.generated || c.renamed })
	c := genConfig{kind: pick(g, []string{"ConfigMap", "Secret"}), name: "comp", current: "comp", names: []string{"comp"}, generated: true, namespace: g.namespace()}
	behavior := ""
	if len(generated) > 0 && g.chance(0.5) {
		c, behavior = pick(g, generated), "merge"
	}
	field := "configMapGenerator"
	if c.kind == "Secret" {
		field = "secretGenerator"
	}
	k[field] = []any{g.generator(dir, kfile, c, behavior)}
	if len(workloads) > 0 {
		k["patches"] = []any{map[string]any{"patch": g.envPatch(pick(g, workloads), append(slices.Clone(configs), c))}}
	}
	g.put(kfile, k)
}

// write writes the tree into dir, its confighash function running fn.
func (g *treeGen) write(t *testing.T, dir, fn string) {
	t.Helper()
	files := maps.Clone(g.files)
	files["confighash.yaml"] = g.functionConfig(fn)
	for path, text := range files {
		p := filepath.Join(dir, path)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
}

// functionConfig is confighash.yaml, running fn.
func (g *treeGen) functionConfig(fn string) string {
	ns := ""
	if g.fnNamespace != "" {
		ns = "namespace: " + g.fnNamespace + "\n"
	}
	return "apiVersion: confighash.dev/v1alpha1\nkind: ConfigHash\n" + ns + "metadata:\n  name: confighash\n  annotations:\n" +
		"    config.kubernetes.io/function: |\n      exec:\n        path: " + fn + "\n"
}

// dump is the tree as text, for a failure message.
func (g *treeGen) dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "== confighash.yaml\n%s\n", g.functionConfig("confighash"))
	for _, path := range g.order {
		fmt.Fprintf(&b, "== %s\n%s\n", path, g.files[path])
	}
	return b.String()
}
