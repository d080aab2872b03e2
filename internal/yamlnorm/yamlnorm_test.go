package yamlnorm_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/yamlnorm"
)

// asJSON reads text with yaml.v3, normalises it and returns it as generic
// JSON, or the error of Normalise.
func asJSON(t testing.TB, text string) (any, error) {
	t.Helper()
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(text), &doc))
	if _, err := yamlnorm.Normalise(&doc); err != nil {
		return nil, err
	}
	var v any
	require.NoError(t, doc.Content[0].Decode(&v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out, nil
}

// apiServer is what kubectl and Helm send: sigs.k8s.io/yaml.YAMLToJSON.
func apiServer(t testing.TB, text string) any {
	t.Helper()
	b, err := sigsyaml.YAMLToJSON([]byte(text))
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// seeds are documents with anchors, aliases and merge keys; they are also
// the fuzz seeds.
var seeds = []string{
	"a: &x hello\nb: *x\n",
	"labels: &l\n  app: web\nspec:\n  selector:\n    matchLabels: *l\n  template:\n    metadata:\n      labels: *l\n",
	"base: &b {a: \"1\", b: \"2\"}\ndata:\n  <<: *b\n  b: \"3\"\n",
	"base: &b {a: \"1\", b: \"2\"}\ndata:\n  b: \"3\"\n  <<: *b\n",
	"x: &x {a: \"1\"}\nyy: &y {a: \"2\", c: \"3\"}\ndata:\n  <<: [*x, *y]\n",
	"data:\n  <<: {a: \"1\"}\n  z: \"2\"\n",
	"c: &c {name: c, image: x}\nspec:\n  containers: [*c]\n  initContainers:\n  - *c\n",
	"a: &a [1, 2]\nb: [*a, *a]\nc: &c\n  d: *a\n  e: [*c2]\nf: &c2 z\n",
	"plain: {a: 1, b: [x, z]}\n",
}

func TestNormaliseReadsAsTheAPIServer(t *testing.T) {
	for _, s := range seeds {
		t.Run(s, func(t *testing.T) {
			if strings.Contains(s, "*c2]\nf: &c2") {
				t.Skip() // alias before its anchor: not YAML
			}
			got, err := asJSON(t, s)
			require.NoError(t, err)
			assert.Equal(t, apiServer(t, s), got)
		})
	}
}

func TestNormaliseRefuses(t *testing.T) {
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		bomb += n + ": &" + n + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+", ", 10), ", ") + "]\n"
		prev = n
	}
	wide := func(dupAt int) string { // a mapping past the size check scans
		text := "data:\n"
		for i := range 40 {
			text += fmt.Sprintf("  k%d: v\n", i)
		}
		return text + fmt.Sprintf("  k%d: again\n", dupAt)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"wide mapping, first key again", wide(0), `data: key "k0" appears twice (lines 2 and 42)`},
		{"wide mapping, late key again", wide(39), `data: key "k39" appears twice (lines 41 and 42)`},
		{"deep path", "spec:\n  template:\n    spec:\n      containers:\n      - name: a\n        env:\n        - {name: X, name: Y}\n", `spec.template.spec.containers[0].env[0]: key "name" appears twice`},
		{"two names", "metadata:\n  name: a\n  name: b\n", `metadata: key "name" appears twice (lines 2 and 3)`},
		{"two specs", "spec: {}\nkind: x\nspec: {}\n", `key "spec" appears twice (lines 1 and 3)`},
		{"in a list", "items:\n- a: 1\n  a: 2\n", `items[0]: key "a" appears twice`},
		{"two merge keys", "a: &a {x: 1}\nb:\n  <<: *a\n  <<: *a\n", `b: key "<<" appears twice`},
		{"billion laughs", bomb, "excessive aliasing"},
		{"merge of a scalar", "a: &a x\nb:\n  <<: *a\n", "b: line 3: a merge key (<<) takes a map or a list of maps"},
		{"merge of a number, deep", "spec:\n  template:\n    metadata:\n      labels:\n        <<: 5\n", "spec.template.metadata.labels: line 5: a merge key"},
		{"merge of a list holding a scalar", "a: &a {x: 1}\nitems:\n- b:\n    <<: [*a, 2]\n", "items[0].b: line 4: a merge key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := asJSON(t, tc.text)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestEditable(t *testing.T) {
	text := "m: &m {a: 1}\nlabels: &l {app: web}\ntemplate:\n  metadata:\n    labels: *l\n  other: *m\nmerged:\n  <<: *m\n  b: 2\nplain: {c: 3}\n"
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(text), &doc))
	r, err := yamlnorm.Normalise(&doc)
	require.NoError(t, err)
	root := doc.Content[0]
	child := func(n *yaml.Node, k string) *yaml.Node {
		for i := 0; i < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				return n.Content[i+1]
			}
		}
		t.Fatalf("no %s", k)
		return nil
	}
	tmpl := child(root, "template")
	assert.True(t, r.Editable(tmpl, child(tmpl, "metadata")), "a mapping holding an alias is itself in place")
	assert.False(t, r.Editable(child(child(tmpl, "metadata"), "labels")), "the copy of an alias")
	assert.False(t, r.Editable(child(root, "m")), "an anchor an alias repeats")
	assert.False(t, r.Editable(child(root, "merged")), "a mapping with merged entries")
	assert.True(t, r.Editable(child(root, "plain")))
	assert.True(t, (*yamlnorm.Result)(nil).Editable(root))
}

// FuzzNormalise holds the expansion to sigs.k8s.io/yaml: whatever both
// accept reads the same, and nothing panics.
func FuzzNormalise(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(text), &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			return
		}
		want, err := sigsyaml.YAMLToJSON([]byte(text))
		if err != nil {
			return
		}
		if _, err := yamlnorm.Normalise(&doc); err != nil {
			return
		}
		var v any
		if doc.Content[0].Decode(&v) != nil {
			return
		}
		if !onlyStrings(v) {
			return // YAML 1.1 and 1.2 resolve plain scalars differently
		}
		got, err := json.Marshal(v)
		require.NoError(t, err)
		var a, b any
		require.NoError(t, json.Unmarshal(got, &a))
		require.NoError(t, json.Unmarshal(want, &b))
		assert.Equal(t, b, a)
	})
}

func onlyStrings(v any) bool {
	switch x := v.(type) {
	case string:
		switch strings.ToLower(x) {
		case "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~":
			return false // YAML 1.1 reads these as booleans or null
		}
		return x != "" && !strings.ContainsAny(x, "\\\"'") && strings.TrimSpace(x) == x && !strings.ContainsAny(x[:1], "0123456789.+-")
	case map[string]any:
		for k, e := range x {
			if !onlyStrings(k) || !onlyStrings(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !onlyStrings(e) {
				return false
			}
		}
		return true
	}
	return false
}

// TestDescribe names each kind of node as the content readers' errors say
// it: a scalar by its tag.
func TestDescribe(t *testing.T) {
	for text, want := range map[string]string{
		"{a: b}": "a map", "[a]": "a list", "*x": "an alias", "1": "a number", "1.5": "a number", "true": "a boolean",
		"~": "null", "2001-12-14": "a timestamp", "!!binary aGk=": "a !!binary value", "abc": "a string", "'1'": "a string",
		"!foo x": "a !foo value",
	} {
		var doc yaml.Node
		require.NoError(t, yaml.Unmarshal([]byte("a: &x 1\nk: "+text+"\n"), &doc))
		assert.Equal(t, want, yamlnorm.Describe(doc.Content[0].Content[3]), "%s", text)
	}
	assert.Equal(t, "nothing", yamlnorm.Describe(&yaml.Node{}))
}

// TestKeysWithoutNames: a list or map as a mapping key has no name, so two
// of them are not one key repeated, nor is one of them the key "". kubectl
// and Helm refuse such a key loudly: where confighash reads the mapping
// (config content, the functionConfig) its reader says so; elsewhere it is
// left to them, as postrenderer's TestKubernetesManifests pins with
// Kubernetes' own salt-templated manifests ("cpu: {{ … }}"). A repeated
// named key beside them, which the API server would drop silently, is
// still found, in small and wide mappings.
func TestKeysWithoutNames(t *testing.T) {
	wide := func(s string) string {
		for i := range 20 {
			s += fmt.Sprintf("  k%d: v\n", i)
		}
		return s
	}
	for _, tc := range []struct{ name, text, want string }{
		{"a list and a map", "data:\n  [a]: x\n  {c: d}: y\n", ""},
		{"two lists", "data:\n  [a]: x\n  [b]: y\n", ""},
		{"a list and the empty key", "data:\n  [a]: x\n  \"\": y\n", ""},
		{"the empty key and a list", "data:\n  \"\": y\n  [a]: x\n", ""},
		{"wide, a list and the empty key", wide("data:\n  [a]: x\n") + "  \"\": y\n  [b]: z\n", ""},
		{"wide, a name again", wide("data:\n  [a]: x\n  k: y\n") + "  [b]: z\n  k: w\n", `data: key "k" appears twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			require.NoError(t, yaml.Unmarshal([]byte(tc.text), &doc))
			_, err := yamlnorm.Normalise(&doc)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
