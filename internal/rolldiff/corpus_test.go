package rolldiff_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/rolldiff"
	"github.com/confighash/confighash/internal/testing/benchgen"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

// corpusStreams returns the shared corpus as a user would render it: Argo
// CD's install.yaml, and kube-prometheus's files as one stream.
func corpusStreams(t *testing.T) map[string][]byte {
	argo, err := os.ReadFile(filepath.Join(testtools.Corpus(t), "argo-cd", "install.yaml"))
	require.NoError(t, err)
	return map[string][]byte{"argo-cd": argo, "kube-prometheus": testtools.Stream(testtools.CorpusFiles(t, "kube-prometheus"))}
}

// consumer is a workload and what its pod spec consumes, found with
// hashing.Discover over the typed pod template: an oracle that does not go
// through inject or rolldiff.
type consumer struct {
	id, namespace string
	uses          []hashing.Use
}

func consumers(t *testing.T, nodes []*yaml.RNode) []consumer {
	var out []consumer
	for _, n := range nodes {
		path := []string{"spec", "template"}
		switch n.GetKind() {
		case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job":
		case "CronJob":
			path = []string{"spec", "jobTemplate", "spec", "template"}
		default:
			continue
		}
		tn, err := n.Pipe(yaml.Lookup(path...))
		require.NoError(t, err)
		if tn == nil {
			continue
		}
		var tmpl corev1.PodTemplateSpec
		require.NoError(t, sigsyaml.Unmarshal([]byte(tn.MustString()), &tmpl))
		out = append(out, consumer{id: n.GetKind() + "/" + n.GetName(), namespace: n.GetNamespace(), uses: hashing.Discover(&tmpl.Spec)})
	}
	return out
}

// keyEdit sets one key of one config to a value it never had.
type keyEdit struct {
	kind            hashing.Kind
	namespace, name string
	key             string
}

func (e keyEdit) String() string {
	return fmt.Sprintf("%s %s key %s", e.kind, hashing.ObjectName(e.namespace, e.name), e.key)
}

// consumersOf lists the workloads that consume the edited key.
func (e keyEdit) consumersOf(all []consumer) []string {
	var out []string
	for _, c := range all {
		if c.namespace != e.namespace {
			continue
		}
		for _, u := range c.uses {
			if u.Kind != e.kind || u.Name != e.name {
				continue
			}
			if u.All || contains(u.Keys, e.key) {
				out = append(out, c.id)
			}
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// apply returns the stream with the key set (added when absent). Only the
// edited document is parsed and written anew; the others keep their bytes.
func (e keyEdit) apply(t *testing.T, input []byte) []byte {
	docs := splitDocs(input)
	found := false
	for i, doc := range docs {
		if !bytes.Contains(doc, []byte(e.name)) || !bytes.Contains(doc, []byte(e.kind)) {
			continue
		}
		n, err := yaml.Parse(string(doc))
		require.NoError(t, err)
		if n.GetKind() != string(e.kind) || n.GetName() != e.name || n.GetNamespace() != e.namespace {
			continue
		}
		found = true
		value := "edited by the rolldiff test"
		field := "data"
		if e.kind == hashing.KindSecret {
			if sd, _ := n.Pipe(yaml.Lookup("stringData", e.key)); sd != nil {
				field = "stringData"
			} else {
				value = base64.StdEncoding.EncodeToString([]byte(value))
			}
		} else if bd, _ := n.Pipe(yaml.Lookup("binaryData", e.key)); bd != nil {
			field, value = "binaryData", base64.StdEncoding.EncodeToString([]byte(value))
		}
		m, err := n.Pipe(yaml.LookupCreate(yaml.MappingNode, field))
		require.NoError(t, err)
		require.NoError(t, m.PipeE(yaml.SetField(e.key, yaml.NewStringRNode(value))))
		docs[i] = []byte(n.MustString())
	}
	require.True(t, found, "%s is not in the stream", e)
	return bytes.Join(docs, []byte("---\n"))
}

// splitDocs splits a stream at its "---" lines, each document ending in a
// newline.
func splitDocs(input []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for _, line := range bytes.SplitAfter(input, []byte("\n")) {
		if bytes.Equal(bytes.TrimRight(line, " \r\n"), []byte("---")) {
			docs = append(docs, cur)
			cur = nil
			continue
		}
		cur = append(cur, line...)
	}
	if len(cur) > 0 && cur[len(cur)-1] != '\n' {
		cur = append(cur, '\n')
	}
	return append(docs, cur)
}

// keyEdits lists, for every ConfigMap and Secret of the stream, an edit of
// each key it has, of each key a workload reads from it, and of a key
// nobody reads.
func keyEdits(t *testing.T, nodes []*yaml.RNode, all []consumer) []keyEdit {
	var out []keyEdit
	for _, n := range nodes {
		kind := hashing.Kind(n.GetKind())
		if n.GetApiVersion() != "v1" || (kind != hashing.KindConfigMap && kind != hashing.KindSecret) {
			continue
		}
		keys := map[string]bool{"confighash-nobody-reads-this": true}
		for _, field := range []string{"data", "binaryData", "stringData"} {
			if m, _ := n.Pipe(yaml.Lookup(field)); m != nil {
				fields, err := m.Fields()
				require.NoError(t, err)
				for _, k := range fields {
					keys[k] = true
				}
			}
		}
		for _, c := range all {
			for _, u := range c.uses {
				if c.namespace == n.GetNamespace() && u.Kind == kind && u.Name == n.GetName() {
					for _, k := range u.Keys {
						keys[k] = true
					}
				}
			}
		}
		for k := range keys {
			out = append(out, keyEdit{kind: kind, namespace: n.GetNamespace(), name: n.GetName(), key: k})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// sample keeps at most n edits, spread over the list, always keeping those
// nobody consumes and those somebody does in the mix.
func sample(edits []keyEdit, n int) []keyEdit {
	if len(edits) <= n {
		return edits
	}
	out := make([]keyEdit, 0, n)
	step := float64(len(edits)) / float64(n)
	for i := 0; i < n; i++ {
		out = append(out, edits[int(float64(i)*step)])
	}
	return out
}

func rolling(r rolldiff.Result) []string {
	var out []string
	for _, w := range r.Workloads {
		if w.Status == rolldiff.StatusRolls {
			out = append(out, w.Kind+"/"+w.Name)
		}
	}
	sort.Strings(out)
	return out
}

// hashChanged renders both streams with confighash (stream mode, what
// bin/confighash does) and lists the workloads whose hash annotation
// differs, by Kind/name.
func hashChanged(t *testing.T, old, cur []byte, opts inject.Options) []string {
	ro, _, err := postrenderer.Process(old, opts)
	require.NoError(t, err)
	rn, _, err := postrenderer.Process(cur, opts)
	require.NoError(t, err)
	ho, hn := podHashes(t, ro), podHashes(t, rn)
	set := map[string]bool{}
	for id, h := range ho {
		if hn[id] != h {
			set[id] = true
		}
	}
	for id, h := range hn {
		if ho[id] != h {
			set[id] = true
		}
	}
	var out []string
	for id := range set {
		kind, rest, _ := cut(id, "/")
		_, name, _ := cut(rest, "/")
		out = append(out, kind+"/"+name)
	}
	sort.Strings(out)
	return out
}

// podHashes is testtools.PodHashes read with a plain kio.ByteReader (no
// index annotations: a tenth of the time on Argo CD's 2 MB install).
func podHashes(t *testing.T, rendered []byte) map[string]string {
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(rendered), OmitReaderAnnotations: true}).Read()
	require.NoError(t, err)
	return testtools.TemplateHashes(nodes)
}

func cut(s, sep string) (string, string, bool) {
	i := bytes.Index([]byte(s), []byte(sep))
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// TestCorpusKeyEdits: on the shared corpus, editing one key of one config
// rolls exactly the workloads that consume that key (the oracle reads the
// pod specs itself), and exactly those whose confighash.dev/hash changes
// once both renders are hashed; a key nobody reads rolls nothing.
func TestCorpusKeyEdits(t *testing.T) {
	for name, input := range corpusStreams(t) {
		t.Run(name, func(t *testing.T) {
			nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(input), OmitReaderAnnotations: true}).Read()
			require.NoError(t, err)
			all := consumers(t, nodes)
			old, err := rolldiff.Read("old", input, inject.Options{})
			require.NoError(t, err)
			edits := keyEdits(t, nodes, all)
			require.NotEmpty(t, edits)
			var consumed, unconsumed int
			for _, e := range sample(edits, 24) {
				edited := e.apply(t, input)
				cur, err := rolldiff.Read("new", edited, inject.Options{})
				require.NoError(t, err, e)
				res := rolldiff.Compare(old, cur)
				want := e.consumersOf(all)
				assert.Equal(t, want, rolling(res), "%s: rolling", e)
				assert.Equal(t, want, hashChanged(t, input, edited, inject.Options{}), "%s: hash annotations that change", e)
				assert.Zero(t, res.New+res.Removed, e)
				for _, w := range res.Workloads {
					if w.Status != rolldiff.StatusRolls {
						continue
					}
					assert.Empty(t, w.Template, "%s: %s: a config edit is no template change", e, w.ID())
					require.Len(t, w.Configs, 1, "%s: %s", e, w.ID())
					c := w.Configs[0]
					assert.Equal(t, []string{e.key}, append(append(append([]string(nil), c.Added...), c.Changed...), c.Removed...), "%s: %s names the key", e, w.ID())
				}
				if len(want) == 0 {
					unconsumed++
					assert.False(t, res.Changed(), "%s: nobody reads it, nothing rolls", e)
				} else {
					consumed++
				}
			}
			t.Logf("%d edits of consumed keys, %d of keys nobody reads", consumed, unconsumed)
			assert.Positive(t, unconsumed)
		})
	}
}

// TestHashAgreement: over random edits of generated streams and the corpus
// (config values changed, keys added and removed, configs dropped from the
// render, images changed), a workload rolls because of its config exactly
// when its confighash.dev/hash differs between the two renders hashed by
// confighash, and rolls at all exactly when that hash or its pod template
// changed.
func TestHashAgreement(t *testing.T) {
	inputs := map[string][]byte{
		"generated": benchgen.Stream(benchgen.Spec{Deployments: 40, ConfigMaps: 25, Secrets: 10, ConfigMapBytes: 300}),
	}
	if os.Getenv("CONFIGHASH_CORPUS") != "" {
		for k, v := range corpusStreams(t) {
			inputs[k] = v
		}
	}
	for name, input := range inputs {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(14, uint64(len(input))))
			old, err := rolldiff.Read("old", input, inject.Options{})
			require.NoError(t, err)
			var byConfigSeen, templateSeen int
			for round := 0; round < 12; round++ {
				edited, templates := randomEdits(t, r, input)
				cur, err := rolldiff.Read("new", edited, inject.Options{})
				require.NoError(t, err)
				res := rolldiff.Compare(old, cur)
				changed := hashChanged(t, input, edited, inject.Options{})
				var byConfig, rolls []string
				for _, w := range res.Workloads {
					id := w.Kind + "/" + w.Name
					if w.Status == rolldiff.StatusRolls {
						rolls = append(rolls, id)
						assert.NotEmpty(t, w.Reasons, id)
						if w.OldHash != w.NewHash {
							byConfig = append(byConfig, id)
							assert.NotEmpty(t, w.Configs, "%s: its hash changed: which config?", id)
						}
					}
				}
				sort.Strings(byConfig)
				byConfigSeen += len(byConfig)
				templateSeen += len(templates)
				assert.Equal(t, changed, byConfig, "round %d: rolls by config vs hash annotations", round)
				want := map[string]bool{}
				for _, id := range changed {
					want[id] = true
				}
				for id := range templates {
					want[id] = true
				}
				var wantList []string
				for id := range want {
					wantList = append(wantList, id)
				}
				sort.Strings(wantList)
				sort.Strings(rolls)
				assert.Equal(t, wantList, rolls, "round %d: rolls", round)
			}
			assert.Positive(t, byConfigSeen, "the edits rolled nothing through config")
			assert.Positive(t, templateSeen, "the edits changed no template")
		})
	}
}

// randomEdits makes one to four edits: a config key's value changed, a key
// added, a key removed, a config dropped from the render, or a container
// image changed. It returns the stream and the Kind/name of the workloads
// whose template it edited.
func randomEdits(t *testing.T, r *rand.Rand, input []byte) ([]byte, map[string]bool) {
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(input), OmitReaderAnnotations: true}).Read()
	require.NoError(t, err)
	var configs, workloads []int
	for i, n := range nodes {
		switch n.GetKind() {
		case "ConfigMap", "Secret":
			configs = append(configs, i)
		case "Deployment", "StatefulSet", "DaemonSet":
			workloads = append(workloads, i)
		}
	}
	templates := map[string]bool{}
	drop := map[int]bool{}
	for e := 1 + r.IntN(4); e > 0; e-- {
		op := r.IntN(5)
		if op == 4 && len(workloads) > 0 {
			n := nodes[workloads[r.IntN(len(workloads))]]
			img, err := n.Pipe(yaml.Lookup("spec", "template", "spec", "containers", "0", "image"))
			require.NoError(t, err)
			if img != nil {
				img.YNode().Value += "-edited"
				templates[n.GetKind()+"/"+n.GetName()] = true
			}
			continue
		}
		if len(configs) == 0 {
			continue
		}
		i := configs[r.IntN(len(configs))]
		n := nodes[i]
		if op == 3 {
			drop[i] = true
			continue
		}
		field := "data"
		if n.GetKind() == "Secret" {
			if sd, _ := n.Pipe(yaml.Lookup("stringData")); sd != nil {
				field = "stringData"
			}
		}
		m, err := n.Pipe(yaml.LookupCreate(yaml.MappingNode, field))
		require.NoError(t, err)
		keys, err := m.Fields()
		require.NoError(t, err)
		value := fmt.Sprintf("edit-%d", r.Int())
		if field == "data" && n.GetKind() == "Secret" {
			value = base64.StdEncoding.EncodeToString([]byte(value))
		}
		switch {
		case op == 0 && len(keys) > 0:
			require.NoError(t, m.PipeE(yaml.SetField(keys[r.IntN(len(keys))], yaml.NewStringRNode(value))))
		case op == 2 && len(keys) > 0:
			require.NoError(t, m.PipeE(yaml.Clear(keys[r.IntN(len(keys))])))
		default:
			require.NoError(t, m.PipeE(yaml.SetField(fmt.Sprintf("added-%d", r.IntN(3)), yaml.NewStringRNode(value))))
		}
	}
	var kept []*yaml.RNode
	for i, n := range nodes {
		if !drop[i] {
			kept = append(kept, n)
		}
	}
	out, err := kio.StringAll(kept)
	require.NoError(t, err)
	return []byte(out), templates
}
