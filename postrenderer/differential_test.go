package postrenderer_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/fn"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/benchgen"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

// TestDifferential runs every input the project has through stream mode (the
// Helm post-renderer) and KRM mode (the function) and holds them to each
// other: both accept or both reject the input; when they accept it, every
// document comes out semantically equal with the same hash, and stream mode
// changed nothing but annotation lines. The inputs are every YAML and JSON
// file of the repository (testdata, examples, charts, install manifests), the
// fuzz corpora, generated streams and, when CONFIGHASH_CORPUS is set, the
// shared corpus.
func TestDifferential(t *testing.T) {
	inputs := repositoryInputs(t)
	for k, v := range generatedInputs() {
		inputs[k] = v
	}
	if dir := os.Getenv("CONFIGHASH_CORPUS"); dir != "" {
		for k, v := range corpusStreams(t) {
			inputs["corpus/"+k] = v
		}
	} else {
		t.Log("CONFIGHASH_CORPUS is not set: the shared corpus is left out of the differential run")
	}
	require.Greater(t, len(inputs), 40, "the differential run needs the project's inputs")

	accepted := 0
	for name, input := range inputs {
		t.Run(name, func(t *testing.T) {
			if differential(t, input, inject.Options{DefaultNamespace: "shop"}) {
				accepted++
			}
		})
	}
	t.Logf("%d inputs, %d accepted by both modes", len(inputs), accepted)
	assert.Greater(t, accepted, 20, "most inputs are valid streams")
}

// differential compares the two modes on one input and reports whether they
// accepted it. A ResourceList input is compared as the plain stream of its
// items, which is what stream mode would be given.
func differential(t *testing.T, input []byte, opts inject.Options) bool {
	t.Helper()
	if items, ok := resourceListItems(input); ok {
		input = items
	}
	out, _, streamErr := postrenderer.Process(input, opts)
	krm, krmErr := runKRM(t, input, opts)
	if streamErr == nil && krmErr != nil {
		// Stream mode copies documents of kinds that cannot matter without
		// parsing them; what is wrong inside one is for the next reader
		// (Helm, kubectl) to find. Without those documents the modes must
		// agree again.
		if read, unread := postrenderer.Unread(input, opts); unread > 0 {
			if _, err := runKRM(t, read, opts); err == nil {
				t.Logf("KRM mode rejects a document stream mode copies unread: %v", krmErr)
				return false
			}
		}
	}
	if streamErr != nil || krmErr != nil {
		if (streamErr == nil) != (krmErr == nil) {
			t.Errorf("the modes disagree on whether the input is valid:\nstream mode: %v\nKRM mode:    %v", streamErr, krmErr)
		}
		if streamErr != nil {
			assert.Nil(t, out, "no partial output on error")
			t.Logf("both modes reject the input: %v", streamErr)
		}
		return false
	}
	if krm == nil {
		return false
	}
	if loneCR.Match(input) {
		// Stream mode writes a workload with a carriage return that no line
		// feed follows anew (YAML counts it as a line break, the byte editor
		// does not): such a stream is compared by meaning only.
		t.Log("a lone carriage return: compared by meaning, not by lines")
	} else {
		assertAnnotationLinesOnly(t, string(input), string(out), inject.DefaultPrefix)
	}

	got := semantic(t, out)
	want := semantic(t, krm)
	require.Len(t, got, len(want), "documents")
	for i := range want {
		if postrenderer.ReadAsHelm4Installs(input) {
			// Stream mode reads Helm 4's stream (documents with its
			// postrender-filename annotation) as Helm 4 installs it, which
			// no KRM function is given: TestGolden holds it
			// (testdata/helm4-hooks).
			t.Log("a Helm 4 stream read as Helm 4 installs it: not compared with KRM mode")
			break
		}
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("document %d differs:\nstream mode: %v\nKRM mode:    %v", i, got[i], want[i])
		}
	}
	assertSecondRunSame(t, out, opts)
	return true
}

// resourceListItems returns the items of a ResourceList as a plain stream.
func resourceListItems(input []byte) ([]byte, bool) {
	rw := &kio.ByteReader{Reader: bytes.NewReader(input), OmitReaderAnnotations: true}
	nodes, err := rw.Read()
	if err != nil || len(nodes) == 0 || !bytes.Contains(input, []byte("kind: ResourceList")) {
		return nil, false
	}
	if writable(nodes) != nil {
		return nil, false
	}
	var b bytes.Buffer
	if err := (kio.ByteWriter{Writer: &b}).Write(nodes); err != nil {
		return nil, false
	}
	return b.Bytes(), true
}

// writable reports the first of nodes kyaml's writer cannot write: it
// panics on an item that is not a mapping, or whose metadata is not a map
// (fn.RunBytes refuses such items, and a KRM function is never given one).
func writable(nodes []*kyaml.RNode) error {
	for i, n := range nodes {
		if n.YNode().Kind != kyaml.MappingNode {
			return fmt.Errorf("document %d is not an object", i)
		}
		if err := inject.CheckMetadata(n); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
	}
	return nil
}

// runKRM wraps the stream's documents in a ResourceList, runs the function on
// it and returns the items it wrote as a plain stream. It returns nil, nil
// when kyaml cannot carry the input into a ResourceList unchanged (a flow
// mapping entry with no value becomes ” when kyaml writes it), which no
// KRM function could be given.
func runKRM(t *testing.T, input []byte, opts inject.Options) ([]byte, error) {
	t.Helper()
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(input), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, err
	}
	if err := writable(nodes); err != nil {
		return nil, err
	}
	var rl bytes.Buffer
	if err := (kio.ByteWriter{Writer: &rl, WrappingKind: kio.ResourceListKind, WrappingAPIVersion: kio.ResourceListAPIVersion}).Write(nodes); err != nil {
		return nil, err
	}
	if items, ok := resourceListItems(rl.Bytes()); ok && !reflect.DeepEqual(decodeAll(items), decodeAll(input)) {
		t.Logf("kyaml changes this input when it writes it into a ResourceList; the KRM comparison is left out")
		return nil, nil
	}
	var out bytes.Buffer
	if _, err := fn.Run(fn.Processor{Base: opts}, &rl, &out); err != nil {
		return nil, err
	}
	items, err := (&kio.ByteReader{Reader: &out, OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = kio.ByteWriter{Writer: &b}.Write(items)
	return b.Bytes(), err
}

// decodeAll decodes every document of a stream with yaml.v3, without kyaml's
// encoder in between, dropping empty documents.
func decodeAll(stream []byte) []any {
	var out []any
	dec := kyaml.NewDecoder(bytes.NewReader(stream))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			return out
		}
		if v != nil {
			out = append(out, dropEmptyMetadata(v))
		}
	}
}

// readerAnnotations are the annotations kyaml's readers and writers add or
// drop when they carry items through a ResourceList.
var readerAnnotations = []string{
	kioutil.IndexAnnotation, kioutil.PathAnnotation, kioutil.IdAnnotation, kioutil.SeqIndentAnnotation,
	kioutil.LegacyIndexAnnotation, kioutil.LegacyPathAnnotation, kioutil.LegacyIdAnnotation, //nolint:staticcheck
}

// semantic returns each document of a stream as the JSON value the API
// server would read, with empty annotation maps dropped.
func semantic(t *testing.T, stream []byte) []any {
	t.Helper()
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(stream), OmitReaderAnnotations: true}).Read()
	require.NoError(t, err)
	out := make([]any, len(nodes))
	for i, n := range nodes {
		s, err := n.String()
		require.NoError(t, err)
		j, err := sigsyaml.YAMLToJSON([]byte(s))
		require.NoError(t, err, "document %d", i)
		var v any
		require.NoError(t, sigsyaml.Unmarshal(j, &v))
		if m, ok := v.(map[string]any); ok {
			if meta, ok := m["metadata"].(map[string]any); ok {
				if ann, ok := meta["annotations"].(map[string]any); ok {
					for _, k := range readerAnnotations {
						delete(ann, k)
					}
				}
			}
		}
		out[i] = dropEmptyMetadata(v)
	}
	return out
}

// dropEmptyMetadata removes empty or null annotations and metadata maps at
// every depth: `metadata: {}` and a missing metadata are the same object.
func dropEmptyMetadata(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			c = dropEmptyMetadata(c)
			if m, ok := c.(map[string]any); (k == "annotations" || k == "metadata") && (c == nil || ok && len(m) == 0) {
				delete(v, k)
				continue
			}
			v[k] = c
		}
	case []any:
		for i := range v {
			v[i] = dropEmptyMetadata(v[i])
		}
	}
	return v
}

// loneCR matches a carriage return that no line feed follows.
var loneCR = regexp.MustCompile(`\r([^\n]|$)`)

var (
	// keyLine is a metadata or annotations key confighash may add, expand or
	// remove around its annotations, in YAML or JSON.
	keyLine = regexp.MustCompile(`^\s*"?(metadata|annotations)"?\s*:\s*(\{\s*\}?|null|~)?\s*,?\s*(#.*)?\r?$`)
	// closeLine closes a JSON object confighash opened.
	closeLine = regexp.MustCompile(`^\s*\},?\s*\r?$`)
)

// assertAnnotationLinesOnly fails unless every line that differs between in
// and out holds a confighash annotation, or is a metadata or annotations key
// (or the brace closing one in JSON) around them.
func assertAnnotationLinesOnly(t *testing.T, in, out, prefix string) {
	t.Helper()
	ours := func(line string) bool {
		return strings.Contains(line, prefix+"/") || keyLine.MatchString(line) || closeLine.MatchString(line)
	}
	grown := func(in, out string) bool { return insertedInto(in, out, prefix) }
	if d := foreignDifference(in, out, lineRules{added: ours, removed: ours, grown: grown}); d != "" {
		t.Fatalf("stream mode changed more than annotation lines, %s", d)
	}
}

// insertedInto reports whether out is in with one contiguous insertion that
// holds a confighash annotation.
func insertedInto(in, out, prefix string) bool {
	if len(out) <= len(in) {
		return false
	}
	p := 0
	for p < len(in) && in[p] == out[p] {
		p++
	}
	rest := in[p:]
	return strings.HasSuffix(out, rest) && strings.Contains(out[p:len(out)-len(rest)], prefix+"/")
}

// repositoryInputs reads every YAML and JSON file of the repository, and the
// fuzz corpora of the stream package.
func repositoryInputs(t *testing.T) map[string][]byte {
	t.Helper()
	root := testtools.RepoRoot(t)
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case strings.HasSuffix(path, ".yaml"), strings.HasSuffix(path, ".yml"), strings.HasSuffix(path, ".json"):
			out[rel] = b
		case strings.Contains(rel, filepath.Join("testdata", "fuzz")+string(filepath.Separator)):
			for k, v := range fuzzInputs(b) {
				out[rel+"#"+strconv.Itoa(k)] = v
			}
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// fuzzInputs returns the []byte and string values of a Go fuzz corpus file.
func fuzzInputs(file []byte) map[int][]byte {
	out := map[int][]byte{}
	for i, line := range strings.Split(string(file), "\n") {
		for _, p := range []string{"[]byte(", "string("} {
			if rest, ok := strings.CutPrefix(line, p); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(rest, ")")); err == nil {
					out[i] = []byte(s)
				}
			}
		}
	}
	return out
}

// generatedInputs are benchmark streams at a small size, and the same with
// the layouts users write by hand.
func generatedInputs() map[string][]byte {
	small := benchgen.Spec{Deployments: 30, ConfigMaps: 30, Secrets: 10, ConfigMapBytes: 300}
	return map[string][]byte{
		"generated/benchgen":        benchgen.Stream(small),
		"generated/benchgen (CRLF)": bytes.ReplaceAll(benchgen.Stream(small), []byte("\n"), []byte("\r\n")),
		"generated/cluster-filled":  []byte(clusterFilledStream),
	}
}

// clusterFilledStream holds the configs the cluster fills in
// (hashing.ClusterFilled) as charts write them, each marker also with
// another value and as the other of label and annotation, and a Deployment
// reading them all.
const clusterFilledStream = `apiVersion: v1
kind: ConfigMap
metadata:
  name: service-ca
  annotations:
    service.beta.openshift.io/inject-cabundle: "true"
data:
  old: kept
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: trusted-ca
  labels:
    config.openshift.io/inject-trusted-cabundle: "true"
data:
  old: deleted
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-injected
  annotations:
    service.beta.openshift.io/inject-cabundle: "false"
  labels:
    service.beta.openshift.io/inject-cabundle: "true"
    config.openshift.io/inject-trusted-cabundle: "false"
data:
  k: v
---
apiVersion: v1
kind: Secret
type: kubernetes.io/service-account-token
metadata:
  name: robot-token
  annotations:
    kubernetes.io/service-account.name: robot
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: app
        envFrom:
        - configMapRef:
            name: service-ca
        - configMapRef:
            name: trusted-ca
        - configMapRef:
            name: not-injected
        - secretRef:
            name: robot-token
`

// TestExternalByContent: stream mode, as KRM mode, lists as external the
// configs whose rendered content is not what the cluster will hold, and
// hashes the others as the function does: those the cluster fills in (only
// the ConfigMap whose markers do not make it one is hashed), and the
// Secrets encrypted with SOPS (testdata/fn's sops-encrypted case). The
// report says why.
func TestExternalByContent(t *testing.T) {
	sops, err := os.ReadFile("../testdata/fn/sops-encrypted/input.yaml")
	require.NoError(t, err)
	tests := []struct {
		name, input, namespace string
		external, inStream     string
		finding                string
	}{
		{name: "the cluster fills them in", input: clusterFilledStream, namespace: "shop",
			external: "ConfigMap/service-ca,ConfigMap/trusted-ca,Secret/robot-token", inStream: "ConfigMap/not-injected",
			finding: "consumes Secret shop/robot-token, which the cluster fills in"},
		{name: "encrypted with SOPS", input: string(sops),
			external: "ConfigMap/podinfo-flags,Secret/podinfo-registry,Secret/podinfo-token", inStream: "ConfigMap/podinfo-config",
			finding: "consumes Secret apps/podinfo-token, which is encrypted with SOPS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := inject.Options{DefaultNamespace: tc.namespace}
			out, report, err := postrenderer.Process([]byte(tc.input), opts)
			require.NoError(t, err)
			require.Len(t, report.Workloads, 1)
			w := report.Workloads[0]
			assert.Equal(t, tc.external, w.ExternalValue())
			require.Len(t, w.InStream, 1)
			assert.Equal(t, tc.inStream, w.InStream[0].Ref())
			assert.Contains(t, string(out), tc.external)
			krm, err := runKRM(t, []byte(tc.input), opts)
			require.NoError(t, err)
			assert.Equal(t, testtools.PodHashes(t, string(krm)), testtools.PodHashes(t, string(out)), "the KRM function's hash")
			var messages []string
			for _, f := range report.Findings {
				messages = append(messages, f.Message)
			}
			assert.Contains(t, strings.Join(messages, "\n"), tc.finding)
		})
	}
}
