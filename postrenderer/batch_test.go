package postrenderer

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/internal/yamlnode"
)

// FuzzParseBatch holds the batched parse to parsing each document on its
// own: the same trees (kinds, tags, values, styles, anchors, lines and
// columns) and the same errors, whatever the stream. Comments are not
// compared: yaml.v3 may hand a comment that opens a document to the one
// before it, and only re-encoding, which parses the document on its own,
// writes comments.
func FuzzParseBatch(f *testing.F) {
	testtools.AddSeedFiles(f, "testdata/*/input.yaml")
	f.Add([]byte("---\na: &x 1\n---\nb: *x\n"))
	f.Add([]byte("---\na: 1\n...\n---\nb: 2\n"))
	f.Add([]byte("---\na: 1\n# foot\n---\n# head\nb: [1,\n---\nc: 3"))
	f.Fuzz(func(t *testing.T, input []byte) {
		var texts [][]byte
		for _, c := range split(input) {
			if hasContent(c.text) {
				texts = append(texts, c.text)
			}
		}
		nodes, _, errs := parseBatch(texts)
		for i, text := range texts {
			want, wantErr := parse(text)
			// parseBatch's errors name lines as yaml.v3's nodes hold them;
			// the stream turns them into an editor's as parse does
			// (inject.Doc.Lines), or leaves them out for Helm 4's text.
			if got := yamlnode.EditorLines(text, errs[i]); fmt.Sprint(got) != fmt.Sprint(wantErr) {
				t.Fatalf("document %d: error %v, on its own %v", i, got, wantErr)
			}
			if wantErr != nil {
				continue
			}
			if d := diffNodes(want.YNode(), nodes[i].YNode(), "$"); d != "" {
				t.Fatalf("document %d differs from parsing it on its own: %s\n%s", i, d, text)
			}
		}
	})
}

func TestParseBatchLines(t *testing.T) {
	texts := [][]byte{[]byte("---\na: 1\n"), []byte("---\n# c\nb:\n  c: 2"), []byte("---\nd: 3\n")}
	nodes, _, errs := parseBatch(texts)
	for i := range texts {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	if got := nodes[1].YNode().Content[1].Content[1].Line; got != 4 {
		t.Errorf("c's value on line %d of its document, want 4", got)
	}
	if got := nodes[2].YNode().Line; got != 2 {
		t.Errorf("third document's mapping on line %d, want 2", got)
	}
}

func diffNodes(a, b *yaml.Node, path string) string {
	switch {
	case a == nil || b == nil:
		if a != b {
			return path + ": nil"
		}
		return ""
	case a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value || a.Style != b.Style ||
		a.Anchor != b.Anchor || a.Line != b.Line || a.Column != b.Column ||
		len(a.Content) != len(b.Content):
		return fmt.Sprintf("%s: %+v against %+v", path, summary(a), summary(b))
	}
	if d := diffNodes(a.Alias, b.Alias, path+"*"); d != "" {
		return d
	}
	for i := range a.Content {
		if d := diffNodes(a.Content[i], b.Content[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
			return d
		}
	}
	return ""
}

func summary(n *yaml.Node) string {
	return strings.Join([]string{fmt.Sprint(n.Kind), n.Tag, n.Value, fmt.Sprint(n.Style), fmt.Sprint(n.Line, ":", n.Column),
		fmt.Sprint(len(n.Content))}, "|")
}
