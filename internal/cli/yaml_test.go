package cli_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

var hashLine = regexp.MustCompile(`confighash\.dev/hash: ["']?(v1-sha256:[0-9a-f]{64})`)

// hashesOf returns the hashes written in out, in order.
func hashesOf(out string) []string {
	var hs []string
	for _, m := range hashLine.FindAllStringSubmatch(out, -1) {
		hs = append(hs, m[1])
	}
	return hs
}

// withoutAnnotationLines drops the lines confighash writes, so that what is
// left of an output must equal its input.
func withoutAnnotationLines(s string) string {
	var keep []string
	for _, l := range strings.SplitAfter(s, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "confighash.dev/") || t == "annotations:" || t == "metadata:" {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "")
}

// TestInputTheAPIServerRefuses: input that kubectl or the API server would
// read differently from what was written (a key written twice, items that
// are not a list) is an error naming the document, in both modes, with
// nothing written.
func TestInputTheAPIServerRefuses(t *testing.T) {
	twoNames := strings.Replace(deployment, "  name: web\n", "  name: web\n  name: web2\n", 1)
	twoSpecs := deployment + "spec: {}\n"
	twoDataKeys := configMap + "  k: w\n"
	for _, tc := range []struct {
		name, input string
		want        []string
	}{
		{"two metadata.name, stream", configMap + "---\n" + twoNames, []string{"document 1", `metadata: key "name" appears twice`}},
		{"two spec, stream", configMap + "---\n" + twoSpecs, []string{"document 1", `key "spec" appears twice`}},
		{"two data keys, stream", twoDataKeys + "---\n" + deployment, []string{"document 0", `"k" appears twice`}},
		{"two metadata.name, KRM", testtools.ResourceList(configMap+"---\n"+twoNames, ""), []string{"items[1]", `metadata: key "name" appears twice`}},
		{"two spec, KRM", testtools.ResourceList(configMap+"---\n"+twoSpecs, ""), []string{"items[1]", `key "spec" appears twice`}},
		{"two data keys, KRM", testtools.ResourceList(twoDataKeys+"---\n"+deployment, ""), []string{"items[0]", `"k" appears twice`}},
		{"items not a list", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: 5\n", []string{"ResourceList", "items", "not a list"}},
		{"items a map", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: {a: b}\n", []string{"ResourceList", "items", "not a list"}},
		{"item not an object", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [5]\n", []string{"items[0]", "not an object"}},
		{"two items keys", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nitems: []\n", []string{"ResourceList", `key "items" appears twice`}},
		{"alias bomb in a ConfigMap, stream", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata:\n  a: &a x\n" + laughs(), []string{"document 0", "excessive aliasing"}},
		{"alias bomb in a ConfigMap, KRM", testtools.ResourceList("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\nx:\n  a: &a [x]\n"+laughs(), ""), []string{"items[0]", "excessive aliasing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.input)
			assert.Equal(t, 1, code, errOut)
			assert.Empty(t, out, "nothing on stdout")
			for _, w := range tc.want {
				assert.Contains(t, errOut, w)
			}
			// explain, verify and diff read the input as the render does.
			good, _ := diffInputs(t, configMap+"---\n"+deployment, "")
			for _, args := range [][]string{{"explain"}, {"explain", "--json"}, {"verify"}, {"diff", good, "-"}, {"diff", "--json", "-", good}} {
				code, out, errOut := run(t, tc.input, args...)
				assert.Equal(t, 1, code, "%s: %s", args, errOut)
				assert.Empty(t, out, "%s: nothing on stdout", args)
				for _, w := range tc.want {
					assert.Contains(t, errOut, w, args)
				}
			}
		})
	}
}

// laughs is the rest of a billion-laughs mapping started by "  a: &a …".
func laughs() string {
	s := ""
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		s += "  " + n + ": &" + n + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 10), ",") + "]\n"
		prev = n
	}
	return s
}

// TestAnchorsAliasesAndMergeKeys: anchors, aliases and merge keys are valid
// YAML that kubectl and Helm resolve; confighash hashes what they resolve
// to, in both modes, and stream mode still changes only annotation lines.
func TestAnchorsAliasesAndMergeKeys(t *testing.T) {
	const workloadLabels = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: &l
    app: web
spec:
  selector:
    matchLabels: *l
  template:
    metadata:
      labels: *l
    spec:
      containers:
      - &c
        name: web
        image: x
        envFrom:
        - configMapRef:
            name: cfg
      initContainers:
      - *c
`
	const written = `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: "1"
  b: "2"
  c: "2"
`
	for _, tc := range []struct{ name, config, workload string }{
		{"aliases in data", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"1\"\n  b: &two \"2\"\n  c: *two\n", deployment},
		{"merge key in data", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  <<: &base\n    a: \"0\"\n    c: \"2\"\n  a: \"1\"\n  b: \"2\"\n", deployment},
		{"merge of an anchor defined elsewhere", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  labels: &base {a: \"1\", b: \"2\"}\ndata:\n  <<: *base\n  c: \"2\"\n", deployment},
		{"aliases in the workload", written, workloadLabels},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := tc.config + "---\n" + tc.workload
			// What the API server stores, written out by hand.
			_, plainOut, plainErr := run(t, written+"---\n"+deployment)
			want := hashesOf(plainOut)
			require.Len(t, want, 1, plainErr)

			code, out, errOut := run(t, input)
			require.Equal(t, 0, code, errOut)
			assert.Equal(t, want, hashesOf(out), "stream mode")
			assert.Equal(t, withoutAnnotationLines(input), withoutAnnotationLines(out), "stream mode changes annotation lines only")

			code, out, errOut = run(t, testtools.ResourceList(input, ""))
			require.Equal(t, 0, code, errOut)
			assert.Equal(t, want, hashesOf(out), "KRM mode")
		})
	}
}

// TestAnnotationInsideAnAlias: when the pod template's metadata is an alias
// (or gets its entries from a merge key), writing the annotation in place
// would change every use of the anchor; stream mode refuses, naming the
// document, and KRM mode, which writes the objects anew, annotates the
// expanded template only.
func TestAnnotationInsideAnAlias(t *testing.T) {
	for _, tc := range []struct{ name, workload string }{
		{"template metadata is an alias", "apiVersion: apps/v1\nkind: Deployment\nmetadata: &m\n  name: web\nspec:\n  template:\n    metadata: *m\n    spec:\n      containers:\n      - name: c\n        envFrom: [{configMapRef: {name: cfg}}]\n"},
		{"template metadata is an anchor used elsewhere", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: *m\nspec:\n  template:\n    metadata: &m\n      labels: {app: web}\n    spec:\n      containers:\n      - name: c\n        envFrom: [{configMapRef: {name: cfg}}]\n"},
		{"template metadata merges", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: &l {app: web}\nspec:\n  template:\n    metadata:\n      <<: {labels: *l}\n    spec:\n      containers:\n      - name: c\n        envFrom: [{configMapRef: {name: cfg}}]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.name, "used elsewhere") {
				// An alias must follow its anchor: swap to template-first order.
				tc.workload = "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    metadata: &m\n      labels: {app: web}\n    spec:\n      containers:\n      - name: c\n        envFrom: [{configMapRef: {name: cfg}}]\nmetadata:\n  name: web\n  labels: *m\n"
				tc.workload = strings.Replace(tc.workload, "labels: *m", "annotations: {x: y}\n  labels: {app: web}\nother: *m", 1)
			}
			input := configMap + "---\n" + tc.workload
			code, out, errOut := run(t, input)
			assert.Equal(t, 1, code, out)
			assert.Empty(t, out)
			assert.Contains(t, errOut, "Deployment web (document 1)")
			assert.Contains(t, errOut, "alias")

			code, out, errOut = run(t, testtools.ResourceList(input, ""))
			require.Equal(t, 0, code, errOut)
			assert.Len(t, hashesOf(out), 1, "KRM mode annotates the expanded template once")
		})
	}
}

// TestItemWithoutKindOrName: an item naming no kind or name that holds a
// repeated key is still reported, not a crash.
func TestItemWithoutKindOrName(t *testing.T) {
	code, out, errOut := run(t, "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- a: 1\n  a: 2\n")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `items[0]`)
}
