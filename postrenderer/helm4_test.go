package postrenderer

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"

	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/kyaml/kio"
)

// TestHelm4InstalledSkipsOnlyStableDocuments holds helm4Installed's cheap
// filter to the rule it stands for: a ConfigMap of Helm 4's stream that it
// lets through as written reads the same as Helm 4 stores it (written anew
// by kyaml, a line feed after it), and one it rewrites reads as stored. The
// values are random strings of the characters that move block scalars
// (line breaks, tabs, spaces, comment signs), in every scalar style, with
// and without a comment after them. TestHelmInstallsWhatWasHashed checks the
// rule itself against a real Helm 4 and API server.
func TestHelm4InstalledSkipsOnlyStableDocuments(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	pieces := []string{"a", "b", " ", "\n", "\n\n", "\t", "#", " #c", ":", "-"}
	styles := []yaml3.Style{0, yaml3.LiteralStyle, yaml3.FoldedStyle, yaml3.DoubleQuotedStyle, yaml3.SingleQuotedStyle}
	rewritten := 0
	for range 2000 {
		var v strings.Builder
		for n := rng.Intn(8); n >= 0; n-- {
			v.WriteString(pieces[rng.Intn(len(pieces))])
		}
		value := &yaml3.Node{Kind: yaml3.ScalarNode, Tag: "!!str", Value: v.String(), Style: styles[rng.Intn(len(styles))]}
		if rng.Intn(3) == 0 {
			value.FootComment = "# after"
		}
		sent := helm4Sends(t, configMap(value))
		if sent == "" {
			continue
		}
		read := sent
		if text, ok := helm4Installed([]byte(sent)); ok {
			read = string(text)
			rewritten++
		}
		if got, want := dataOf(t, read), dataOf(t, helm4Writes(t, sent)+"\n"); !reflect.DeepEqual(got, want) {
			t.Fatalf("value %q (style %v, comment %q): read %q, Helm 4 stores %q\nsent:\n%s", value.Value, value.Style, value.FootComment, got, want, sent)
		}
	}
	if rewritten == 0 {
		t.Fatal("no document was rewritten: the test no longer reaches the rule")
	}
}

// configMap is a ConfigMap as a Helm 4 template might render it, with k set
// to value, after another key.
func configMap(value *yaml3.Node) *yaml3.Node {
	scalar := func(s string) *yaml3.Node { return &yaml3.Node{Kind: yaml3.ScalarNode, Value: s} }
	mapping := func(kv ...*yaml3.Node) *yaml3.Node { return &yaml3.Node{Kind: yaml3.MappingNode, Content: kv} }
	return mapping(
		scalar("apiVersion"), scalar("v1"), scalar("kind"), scalar("ConfigMap"),
		scalar("metadata"), mapping(scalar("name"), scalar("c")),
		scalar("data"), mapping(scalar("j"), scalar("x"), scalar("k"), value))
}

// helm4Sends writes a template's document as Helm 4 sends it to its
// post-renderer: read by kyaml, annotated with its file, written anew; ""
// when yaml.v3 cannot write the value.
func helm4Sends(t *testing.T, doc *yaml3.Node) string {
	t.Helper()
	b, err := yaml3.Marshal(doc)
	if err != nil {
		return ""
	}
	nodes, err := kio.ParseAll(string(b))
	if err != nil || len(nodes) != 1 {
		return ""
	}
	if err := nodes[0].SetAnnotations(map[string]string{postrenderFilename: "c/templates/c.yaml"}); err != nil {
		t.Fatal(err)
	}
	out, err := kio.StringAll(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// helm4Writes writes the post-renderer's document anew, as Helm 4 does
// before it stores it.
func helm4Writes(t *testing.T, text string) string {
	t.Helper()
	nodes, err := kio.ParseAll(text)
	if err != nil {
		t.Fatal(err)
	}
	out, err := kio.StringAll(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func dataOf(t *testing.T, text string) map[string]any {
	t.Helper()
	var obj struct {
		Data map[string]any `yaml:"data"`
	}
	if err := yaml3.Unmarshal([]byte(text), &obj); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return obj.Data
}

// TestHelm4Filename: the template file Helm 4's annotation names, as Helm 4
// writes it (single quotes) and as YAML may write it otherwise.
func TestHelm4Filename(t *testing.T) {
	doc := func(value string) []byte {
		return []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    " + postrenderFilename + ": " + value + "\n")
	}
	for _, tc := range []struct {
		text []byte
		want string
	}{
		{doc("'chart/templates/cm.yaml'"), "chart/templates/cm.yaml"},
		{doc("chart/templates/cm.yaml"), "chart/templates/cm.yaml"},
		{doc(`"chart/templates/it's.yaml"`), "chart/templates/it's.yaml"},
		{doc("'chart/templates/it''s.yaml'"), "chart/templates/it's.yaml"},
		{doc("'chart/templates/cm.yaml'  # a comment"), "chart/templates/cm.yaml"},
		{[]byte("metadata: {annotations: {" + postrenderFilename + ": 'c/templates/x.yaml'}}\n"), "c/templates/x.yaml"},
		{doc("[not, a, name]"), ""},
		{[]byte("metadata:\n  name: a\n"), ""},
	} {
		if got := helm4Filename(tc.text); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.text, got, tc.want)
		}
	}
}
