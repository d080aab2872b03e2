package postrenderer_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/internal/yamlnorm"
	"github.com/confighash/confighash/postrenderer"
)

// FuzzProcess checks the byte editor against the kyaml filter: for any input
// both accept, the edited bytes must mean exactly what the filter's nodes
// mean, and a second run must change nothing.
func FuzzProcess(f *testing.F) {
	testtools.AddSeedFiles(f, "testdata/*/input.yaml")
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n---\n"
	const dep = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n%s    spec:\n      containers:\n      - name: a\n        envFrom:\n        - configMapRef:\n            name: c\n"
	for _, meta := range []string{
		"", // no metadata: both annotations inserted under a new metadata
		"    metadata:\n      labels:\n        a: b\n",
		"    metadata:\n      annotations:\n        confighash.dev/hash: v1-sha256:00\n",
		"    metadata:\n      annotations:\n        confighash.dev/key-id: 0011223344556677\n        confighash.dev/hash: v1-hmac-sha256:00\n",
		"    metadata:\n      annotations:\n        confighash.dev/key-id: 0011223344556677\n        other: x\n",
	} {
		f.Add([]byte(cm + fmt.Sprintf(dep, meta)))
	}
	// What the API server reads differently from the text: anchors, aliases
	// and merge keys (expanded), a key written twice (refused), an alias bomb.
	for _, in := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: &v x\n  k: *v\n---\n" + fmt.Sprintf(dep, ""),
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  <<: {k: v}\n  j: w\n---\n" + fmt.Sprintf(dep, ""),
		cm + "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  labels: &l {app: d}\nspec:\n  selector: {matchLabels: *l}\n  template:\n    metadata:\n      labels: *l\n    spec:\n      containers:\n      - &c {name: a, envFrom: [{configMapRef: {name: c}}]}\n      initContainers: [*c]\n",
		cm + "apiVersion: apps/v1\nkind: Deployment\nmetadata: &m\n  name: d\nspec:\n  template:\n    metadata: *m\n",
		cm + "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  name: e\nspec: {}\nspec: {}\n",
		// Lines ended by carriage returns alone: two documents to YAML,
		// one to kubectl, Helm and kustomize (refused).
		strings.ReplaceAll(cm+fmt.Sprintf(dep, ""), "\n", "\r"),
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nx:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n  d: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
		// Keys that are a list or a map (refused by kubectl and Helm), and
		// List items that are no objects or have no map as metadata.
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  [a]: x\n  {b: c}: y\n---\n" + fmt.Sprintf(dep, ""),
		"apiVersion: v1\nkind: List\nitems:\n- x\n- {apiVersion: v1, kind: ConfigMap, metadata: [a]}\n- {a: b, metadata: [a]}\n",
	} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		// Plain, then keyed (which adds the key id next to the hash).
		for _, opts := range []inject.Options{{}, {Key: []byte("fuzz-key")}} {
			checkProcess(t, input, opts)
		}
	})
}

// doubledPlace matches an error that names a document and then, inside,
// a document again ("List l (document 0): items[1]: document 0: …").
var doubledPlace = regexp.MustCompile(`document [0-9]+.*: document [0-9]+`)

func checkProcess(t *testing.T, input []byte, opts inject.Options) {
	t.Helper()
	out, report, err := postrenderer.Process(input, opts)
	if err != nil && doubledPlace.MatchString(err.Error()) {
		t.Errorf("the error names its document twice: %v", err)
	}
	if err != nil || postrenderer.ReadAsHelm4Installs(input) {
		// A ConfigMap or Secret of Helm 4's stream with a block that keeps
		// its blank lines is hashed as Helm 4 will store it, and a hook
		// config Helm 4 does not create on every install and upgrade is
		// left out, which the filter, given the text as sent, does not know
		// (TestHelmInstallsWhatWasHashed and examples' TestHelmHookConfigs
		// check those).
		return
	}
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(input), OmitReaderAnnotations: true}).Read()
	if err != nil || len(nodes) != report.Documents {
		// kio splits some layouts differently ("--- {...}" on one line,
		// "---#"): there is nothing to compare.
		return
	}
	// The KRM path (bin/confighash) expands each item as the stream does.
	// A document of a kind confighash does not read is copied unread, and
	// what is wrong below its top level left to the next reader (see
	// TestUnreadDocuments).
	for _, n := range nodes {
		if !opts.Relevant(n.GetApiVersion(), n.GetKind()) {
			continue
		}
		if _, err := yamlnorm.Normalise(n.YNode()); err != nil {
			t.Fatalf("stream accepted what normalisation refused: %v", err)
		}
	}
	want, err := inject.Filter{Options: opts}.Filter(nodes)
	if err != nil {
		t.Fatalf("stream accepted what the filter refused: %v", err)
	}
	got, err := (&kio.ByteReader{Reader: bytes.NewReader(out), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, out)
	}
	for _, n := range got {
		if !opts.Relevant(n.GetApiVersion(), n.GetKind()) {
			continue
		}
		if _, err := yamlnorm.Normalise(n.YNode()); err != nil {
			t.Fatalf("output does not normalise: %v", err)
		}
	}
	wantJSON, err := asJSON(want)
	if err != nil {
		return // not representable as JSON, so not a Kubernetes object
	}
	gotJSON, err := asJSON(got)
	if err != nil || !reflect.DeepEqual(wantJSON, gotJSON) {
		t.Fatalf("byte edits differ from the filter (key %q):\ninput:\n%s\noutput:\n%s", opts.Key, input, out)
	}
	again, _, err := postrenderer.Process(out, opts)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("second run changed the output (err %v)", err)
	}
}

func asJSON(nodes []*yaml.RNode) ([]any, error) {
	var out []any
	for _, n := range nodes {
		raw, err := n.MarshalJSON()
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
