package postrenderer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// propCase is one document the property test writes annotations into.
type propCase struct {
	text     string
	template []kv // hash and key id, on the pod template
	object   []kv // the external annotation, on the workload
}

// TestAnnotateProperty writes random annotation names and values (hashes,
// key ids that look like decimal, exponent, binary or hex numbers, external
// lists; some cleared) into every layout the editor supports, over old
// values quoted and unquoted, in LF and CRLF. Each must be edited in place,
// read back as the same strings through sigs.k8s.io/yaml, yaml.v3 and kyaml,
// change nothing else (every other line kept, in order; the objects equal
// but for the annotations) and be a fixed point.
func TestAnnotateProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		c := randomCase(rng)
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkAnnotate(t, c) })
		if t.Failed() {
			return
		}
	}
}

// FuzzAnnotateValues writes fuzzed values into a few layouts.
func FuzzAnnotateValues(f *testing.F) {
	for _, s := range []string{"9178192511668845", "1503602033657e77", "0b101", "0o+7", "0x1f", "1_000", "yes", "~", "null", "a: b", "#c", "'q'", "\"", "v1-sha256:00", "1:20", "2001-12-14", ".inf", "é\u2028"} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, value string, layout uint8) {
		if !utf8.ValidString(value) {
			return // annotation values are UTF-8
		}
		rng := rand.New(rand.NewPCG(uint64(layout), 0))
		c := randomCase(rng)
		c.template[1].value = value
		c.text = layoutText(rng, int(layout), c, false)
		checkAnnotate(t, c)
	})
}

func checkAnnotate(t *testing.T, c propCase) {
	t.Helper()
	out, ok := annotateText(t, []byte(c.text), c)
	if !ok {
		t.Fatalf("not edited in place:\n%s", c.text)
	}
	for _, read := range []func([]byte) (map[string]any, error){readSigs, readV3, readKyaml} {
		obj, err := read(out)
		if err != nil {
			t.Fatalf("output does not read back: %v\n%s", err, out)
		}
		checkValues(t, annotationsOf(obj, "spec", "template"), c.template, out)
		checkValues(t, annotationsOf(obj), c.object, out)
	}
	in, err1 := readSigs([]byte(c.text))
	got, err2 := readSigs(out)
	if err1 != nil || err2 != nil {
		t.Fatalf("reading: %v, %v", err1, err2)
	}
	if !reflect.DeepEqual(strip(in, c), strip(got, c)) {
		t.Fatalf("something besides the annotations changed:\ninput:\n%s\noutput:\n%s", c.text, out)
	}
	checkLinesKept(t, c.text, string(out))
	again, ok := annotateText(t, out, c)
	if !ok || !bytes.Equal(again, out) {
		t.Fatalf("second run changed the output:\n%s\nthen:\n%s", out, again)
	}
}

func annotateText(t *testing.T, text []byte, c propCase) ([]byte, bool) {
	t.Helper()
	root, err := parse(text)
	if err != nil {
		t.Fatalf("input does not parse: %v\n%s", err, text)
	}
	_, spec := child(root.YNode(), "spec")
	_, template := child(spec, "template")
	e := newEditor(text, root.YNode())
	if !e.annotate(template, c.template...) || !e.annotate(root.YNode(), c.object...) {
		return nil, false
	}
	return e.apply(), true
}

func checkValues(t *testing.T, got map[string]any, want []kv, out []byte) {
	t.Helper()
	for _, p := range want {
		v, has := got[p.key]
		switch {
		case p.value == "" && has:
			t.Fatalf("%s not removed:\n%s", p.key, out)
		case p.value != "" && v != p.value:
			t.Fatalf("%s reads back as %#v, want %q:\n%s", p.key, v, p.value, out)
		}
	}
}

func readSigs(b []byte) (map[string]any, error) {
	var m map[string]any
	return m, sigsyaml.Unmarshal(b, &m)
}

func readV3(b []byte) (map[string]any, error) {
	var m map[string]any
	return m, yaml.Unmarshal(b, &m)
}

// readKyaml reads as kustomize does: kyaml's nodes, through its own JSON
// conversion; its GetAnnotations must agree.
func readKyaml(b []byte) (map[string]any, error) {
	n, err := yaml.Parse(string(b))
	if err != nil {
		return nil, err
	}
	raw, err := n.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	tn, err := n.Pipe(yaml.Lookup("spec", "template"))
	if err != nil || tn == nil {
		return nil, fmt.Errorf("no template: %w", err)
	}
	for k, v := range tn.GetAnnotations() {
		if annotationsOf(m, "spec", "template")[k] != v {
			return nil, fmt.Errorf("kyaml's GetAnnotations reads %s as %q", k, v)
		}
	}
	return m, nil
}

func annotationsOf(obj map[string]any, path ...string) map[string]any {
	m := obj
	for _, p := range append(path, "metadata", "annotations") {
		next, _ := m[p].(map[string]any)
		if next == nil {
			return nil
		}
		m = next
	}
	return m
}

// strip removes the case's annotations from obj, and the maps they leave
// empty.
func strip(obj map[string]any, c propCase) map[string]any {
	for _, at := range []struct {
		path []string
		kvs  []kv
	}{{[]string{"spec", "template"}, c.template}, {nil, c.object}} {
		holder := obj
		for _, p := range at.path {
			holder, _ = holder[p].(map[string]any)
		}
		meta, _ := holder["metadata"].(map[string]any)
		if ann, _ := meta["annotations"].(map[string]any); ann != nil {
			for _, p := range at.kvs {
				delete(ann, p.key)
			}
		}
		if ann, _ := meta["annotations"].(map[string]any); len(ann) == 0 && meta != nil {
			delete(meta, "annotations")
		}
		if len(meta) == 0 {
			delete(holder, "metadata")
		}
	}
	return obj
}

// checkLinesKept fails unless out holds, in order, every line of in but the
// metadata and annotations lines confighash may rewrite (lines holding
// "metadata", "annotations" or an annotation of its own). A JSON line may
// lose or gain its comma when the entry after it goes or comes.
func checkLinesKept(t *testing.T, in, out string) {
	t.Helper()
	outLines := strings.Split(out, "\n")
	j := 0
	for _, l := range strings.Split(in, "\n") {
		if strings.Contains(l, "metadata") || strings.Contains(l, "annotations") || strings.Contains(l, "/hash") || strings.Contains(l, "/key-id") || strings.Contains(l, "/external") {
			continue
		}
		for j < len(outLines) && noComma(outLines[j]) != noComma(l) {
			j++
		}
		if j == len(outLines) {
			t.Fatalf("line %q lost or moved:\ninput:\n%s\noutput:\n%s", l, in, out)
		}
		j++
	}
}

// randomCase draws annotation names, values and a layout.
func randomCase(rng *rand.Rand) propCase {
	prefix := randomPrefix(rng)
	c := propCase{
		template: []kv{{prefix + "/hash", randomHash(rng)}, {prefix + "/key-id", randomKeyID(rng)}},
		object:   []kv{{prefix + "/external", randomExternal(rng)}},
	}
	for i := range c.template {
		if rng.IntN(6) == 0 {
			c.template[i].value = ""
		}
	}
	c.text = layoutText(rng, rng.IntN(len(blockMetas)+len(jsonMetas)), c, rng.IntN(4) == 0)
	return c
}

func randomPrefix(rng *rand.Rand) string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	labels := make([]string, 1+rng.IntN(3))
	for i := range labels {
		b := make([]byte, 1+rng.IntN(8))
		for j := range b {
			b[j] = chars[rng.IntN(len(chars))]
		}
		if len(b) > 2 && rng.IntN(3) == 0 {
			b[1] = '-'
		}
		labels[i] = string(b)
	}
	return strings.Join(labels, ".")
}

func randomHex(rng *rand.Rand, n int, digits string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[rng.IntN(len(digits))]
	}
	return string(b)
}

func randomHash(rng *rand.Rand) string {
	if rng.IntN(2) == 0 {
		return "v1-sha256:" + randomHex(rng, 64, "0123456789abcdef")
	}
	return "v1-hmac-sha256:" + randomHex(rng, 64, "0123456789abcdef")
}

// randomKeyID draws 16-digit key ids, many of them number-like.
func randomKeyID(rng *rand.Rand) string {
	switch rng.IntN(7) {
	case 0:
		return randomHex(rng, 16, "0123456789") // an integer
	case 1:
		return randomHex(rng, 13, "0123456789") + "e" + randomHex(rng, 2, "0123456789") // a float
	case 2:
		return "0b" + randomHex(rng, 14, "01") // binary in YAML 1.1 and yaml.v3
	case 3:
		return "0" + randomHex(rng, 15, "01234567") // octal in YAML 1.1
	case 4:
		return randomHex(rng, 4, "0123456789") + "_" + randomHex(rng, 11, "0123456789") // YAML 1.1 int
	case 5:
		return randomHex(rng, 16, "abcdef") // letters only
	}
	return randomHex(rng, 16, "0123456789abcdef")
}

func randomExternal(rng *rand.Rand) string {
	switch rng.IntN(4) {
	case 0:
		return ""
	case 1:
		return "ConfigMap/cfg"
	case 2:
		return "ConfigMap/a,Secret/b-2"
	}
	return "Secret/" + randomHex(rng, 5, "0123456789")
}

// oldValue writes an old value for an annotation: the new one unquoted
// (which may read as a number), another hash, or the new one quoted.
func oldValue(rng *rand.Rand, p kv) string {
	v := p.value
	if v == "" || rng.IntN(3) == 0 {
		v = "v1-sha256:" + randomHex(rng, 8, "0123456789abcdef")
	}
	simple := strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:._-") == ""
	switch rng.IntN(3) {
	case 0:
		if simple {
			return v
		}
	case 1:
		if simple {
			return "'" + v + "'"
		}
	}
	return jsonString(v)
}

// jsonString writes v as a string both JSON and YAML read: JSON's own
// escaping leaves DEL and C1 controls raw, which YAML refuses.
func jsonString(v string) string { return doubleQuoted(v) }

// blockMetas are pod template metadata layouts; %s is where existing
// annotations of the case go (one a line, at 8 spaces), %f where they go in
// a flow mapping (", key: value" each).
var blockMetas = []string{
	"",
	"    metadata:\n",
	"    metadata: ~\n",
	"    metadata: null  # none\n",
	"    metadata: {}\n",
	"    metadata: {}  # empty\n",
	"    metadata:\n      labels:\n        app: web\n",
	"    metadata:\n      annotations:\n      labels:\n        app: web\n",
	"    metadata:\n      labels:\n        app: web\n      annotations: ~\n",
	"    metadata:\n      annotations: {}\n",
	"    metadata:\n      labels: {app: web}\n      annotations: {}  # none yet\n",
	"    metadata:\n      annotations: {a: b, \"c\": 'd'%f}\n",
	"    metadata:\n      annotations: {%F}\n      labels: {app: web}\n",
	"    metadata:\n      labels:\n        app: web\n\n      annotations:\n        other: x  # keep\n%s        last: \"y\"\n",
	"    metadata:\n      annotations:\n%s",
	"    metadata:\n      annotations:\n%s    # trailing comment\n",
	"    metadata: {labels: {app: web}}\n",
	"    metadata: {labels: {app: web}, annotations: {x: y%f}}\n",
}

// jsonMetas are the same for JSON documents, at 6 spaces; %j is where
// existing annotations go (",\n" and one a line).
var jsonMetas = []string{
	"",
	"      \"metadata\": {},\n",
	"      \"metadata\": null,\n",
	"      \"metadata\": {\n        \"labels\": {\"app\": \"web\"}\n      },\n",
	"      \"metadata\": {\n        \"annotations\": {},\n        \"labels\": {\"app\": \"web\"}\n      },\n",
	"      \"metadata\": {\n        \"annotations\": {\n          \"other\": \"x\"%j\n        }\n      },\n",
}

const blockDoc = `# Source: chart/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
%w
spec:

  replicas: 1
  template:
%m    spec:
      containers:
        - name: a   # the app
          args: [--x, "y"]

          image: x
`

const jsonDoc = `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "web"%w
  },
  "spec": {
    "template": {
%m      "spec": {
        "containers": [
          {"name": "a", "image": "x"}
        ]
      }
    }
  }
}
`

// layoutText writes the case into layout i (block layouts, then JSON),
// with old values for some of its annotations.
func layoutText(rng *rand.Rand, i int, c propCase, crlf bool) string {
	var doc, meta string
	var block, flow, jsonOld []string
	for _, p := range c.template {
		if rng.IntN(2) == 0 {
			continue
		}
		block = append(block, "        "+p.key+": "+oldValue(rng, p)+[]string{"", "  # old"}[rng.IntN(2)]+"\n")
		flow = append(flow, p.key+": "+oldValue(rng, p))
		jsonOld = append(jsonOld, `"`+p.key+`": `+jsonString(p.value+"x"))
	}
	ext := c.object[0]
	if i < len(blockMetas) {
		meta = blockMetas[i]
		meta = strings.ReplaceAll(meta, "%s", strings.Join(block, ""))
		meta = strings.ReplaceAll(meta, "%f", strings.Join(append([]string{""}, flow...), ", "))
		if len(flow) == 0 {
			meta = strings.ReplaceAll(meta, "%F", "k: v")
		}
		meta = strings.ReplaceAll(meta, "%F", strings.Join(flow, ", "))
		w := []string{"", "  annotations: {}", "  annotations:\n    note: kept\n    " + ext.key + ": ConfigMap/old"}[rng.IntN(3)]
		doc = strings.Replace(strings.Replace(blockDoc, "%w", w, 1), "%m", meta, 1)
		if w == "" {
			doc = strings.Replace(doc, "\n\nspec:", "\nspec:", 1)
		}
	} else {
		meta = jsonMetas[(i-len(blockMetas))%len(jsonMetas)]
		meta = strings.ReplaceAll(meta, "%j", strings.Join(append([]string{""}, jsonOld...), ",\n          "))
		w := []string{"", `,
    "annotations": {"` + ext.key + `": "x"}`}[rng.IntN(2)]
		doc = strings.Replace(strings.Replace(jsonDoc, "%w", w, 1), "%m", meta, 1)
	}
	if crlf {
		doc = strings.ReplaceAll(doc, "\n", "\r\n")
	}
	return doc
}

func noComma(l string) string { return strings.TrimSuffix(strings.TrimSuffix(l, "\r"), ",") }
