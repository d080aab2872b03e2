package postrenderer_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

// corpusStreams returns the corpus as streams a user would pipe: each Argo CD
// file, and kube-prometheus's files concatenated (one install).
func corpusStreams(t *testing.T) map[string][]byte {
	out := map[string][]byte{}
	for _, f := range testtools.CorpusFiles(t, "argo-cd") {
		out["argo-cd/"+f.Name] = f.Data
	}
	kp := testtools.CorpusFiles(t, "kube-prometheus")
	for _, f := range kp {
		out["kube-prometheus/"+f.Name] = f.Data
	}
	out["kube-prometheus (all files as one stream)"] = testtools.Stream(kp)
	require.Greater(t, len(out), 80)
	return out
}

var (
	added   = regexp.MustCompile(`^\s*(confighash\.dev/(hash|external): \S+|annotations:|metadata:)\r?$`)
	changed = regexp.MustCompile(`^\s*confighash\.dev/(hash|external): \S+\r?$`)
)

// TestCorpusByteExact checks, on real manifests, that only confighash's
// annotation lines differ, every document survives, every workload that
// consumes an in-stream config is hashed, the hashes equal the KRM path's,
// and a second run is byte-identical.
func TestCorpusByteExact(t *testing.T) {
	for name, input := range corpusStreams(t) {
		t.Run(name, func(t *testing.T) {
			out, _, err := postrenderer.Process(input, inject.Options{})
			require.NoError(t, err)
			hashed := checkProcessed(t, input, out)
			if strings.HasPrefix(name, "argo-cd/") || strings.HasPrefix(name, "kube-prometheus (") {
				assert.Positive(t, hashed, "these streams have workloads consuming in-stream configs")
			}
		})
	}
}

// checkProcessed checks stream mode's output out for input: only
// confighash's annotation lines differ, every document survives in its
// place, every workload that consumes an in-stream config is hashed, the
// hashes equal the KRM path's, and a second run is byte-identical. It
// returns how many workloads are hashed.
func checkProcessed(t *testing.T, input, out []byte) int {
	t.Helper()
	assertOnlyAnnotationLines(t, string(input), string(out))
	inNodes, outNodes := readAll(t, input), readAll(t, out)
	require.Len(t, outNodes, len(inNodes))
	for i := range inNodes {
		assert.Equal(t, id(inNodes[i]), id(outNodes[i]), "document %d", i)
	}
	hashed := assertConsumersHashed(t, outNodes)
	krm, err := inject.Filter{}.Filter(readAll(t, input))
	require.NoError(t, err)
	for i := range krm {
		assert.Equal(t, podTemplateHash(krm[i]), podTemplateHash(outNodes[i]), "document %d: stream and KRM paths agree", i)
	}
	assertSecondRunSame(t, out, inject.Options{})
	t.Logf("%d documents, %d hashed", len(inNodes), hashed)
	return hashed
}

// assertOnlyAnnotationLines walks both texts line by line: lines only in the
// output must be confighash annotation lines (or the metadata/annotations
// keys holding them), lines only in the input must be confighash lines.
func assertOnlyAnnotationLines(t *testing.T, in, out string) {
	t.Helper()
	if d := foreignDifference(in, out, lineRules{added: added.MatchString, removed: changed.MatchString}); d != "" {
		t.Fatalf("unexpected difference %s", d)
	}
}

// assertSecondRunSame fails unless stream mode, run with opts on its own
// output out, changes nothing.
func assertSecondRunSame(t *testing.T, out []byte, opts inject.Options, msgAndArgs ...any) {
	t.Helper()
	if len(msgAndArgs) == 0 {
		msgAndArgs = []any{"a second run changes nothing"}
	}
	again, _, err := postrenderer.Process(out, opts)
	require.NoError(t, err, msgAndArgs...)
	assert.Equal(t, string(out), string(again), msgAndArgs...)
}

func readAll(t *testing.T, b []byte) []*yaml.RNode {
	t.Helper()
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(b), OmitReaderAnnotations: true}).Read()
	require.NoError(t, err)
	return nodes
}

func id(n *yaml.RNode) string {
	return n.GetApiVersion() + " " + n.GetKind() + " " + n.GetNamespace() + "/" + n.GetName()
}

func podTemplateHash(n *yaml.RNode) string {
	for _, path := range [][]string{{"spec", "template"}, {"spec", "jobTemplate", "spec", "template"}} {
		if tpl, _ := n.Pipe(yaml.Lookup(path...)); tpl != nil {
			return tpl.GetAnnotations()[inject.DefaultPrefix+"/"+inject.HashName]
		}
	}
	return ""
}

// assertConsumersHashed checks that every workload referring to a ConfigMap
// or Secret present in the stream carries a hash, and returns how many do.
func assertConsumersHashed(t *testing.T, nodes []*yaml.RNode) int {
	t.Helper()
	present := map[string]bool{}
	var add func(n *yaml.RNode)
	add = func(n *yaml.RNode) {
		switch n.GetKind() {
		case "ConfigMap", "Secret":
			present[n.GetNamespace()+"/"+n.GetKind()+"/"+n.GetName()] = true
		case "List", "ConfigMapList", "SecretList":
			items, err := n.Pipe(yaml.Lookup("items"))
			require.NoError(t, err)
			elements, err := items.Elements()
			require.NoError(t, err)
			for _, item := range elements {
				add(item)
			}
		}
	}
	for _, n := range nodes {
		add(n)
	}
	hashed := 0
	for _, n := range nodes {
		spec := podSpecOf(t, n)
		if spec == nil {
			continue
		}
		consumes := false
		for _, u := range hashing.Discover(spec) {
			consumes = consumes || present[n.GetNamespace()+"/"+u.Ref()]
		}
		h := podTemplateHash(n)
		assert.Equal(t, consumes, h != "", "%s: consumes in-stream config %v, hash %q", id(n), consumes, h)
		if h != "" {
			hashed++
		}
	}
	return hashed
}
