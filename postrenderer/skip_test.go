package postrenderer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/yamlnode"
)

func TestReadHeader(t *testing.T) {
	cases := []struct {
		name, text       string
		apiVersion, kind string
		ok               bool
	}{
		{"plain", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\n", "apiextensions.k8s.io/v1", "CustomResourceDefinition", true},
		{"separator, comments, CRLF", "---\r\n# Source: chart/templates/crd.yaml\r\nkind: Service # svc\r\napiVersion: \"v1\"\r\n", "v1", "Service", true},
		{"quoted", "apiVersion: 'rbac.authorization.k8s.io/v1'\nkind: \"ClusterRole\"\n", "rbac.authorization.k8s.io/v1", "ClusterRole", true},
		{"no kind", "apiVersion: v1\nmetadata: {}\n", "", "", false},
		{"kind twice", "apiVersion: v1\nkind: Service\nkind: ConfigMap\n", "", "", false},
		{"key twice", "apiVersion: v1\nkind: Service\nspec: {}\nspec: {}\n", "", "", false},
		{"JSON", "{\"apiVersion\": \"v1\", \"kind\": \"Service\"}\n", "", "", false},
		{"content on the marker line", "--- {kind: Service}\napiVersion: v1\nkind: Service\n", "", "", false},
		{"anchor", "apiVersion: v1\nkind: Service\nspec: &s {}\n", "", "", false},
		{"alias kind", "apiVersion: v1\nkind: *k\n", "", "", false},
		{"merge key", "apiVersion: v1\nkind: Service\n<<: {a: b}\n", "", "", false},
		{"tag", "apiVersion: v1\nkind: !!str Service\n", "", "", false},
		{"tab indentation", "apiVersion: v1\nkind: Service\nspec:\n\tports: []\n", "", "", false},
		{"control character", "apiVersion: v1\nkind: Service\nmetadata: {name: \"a\x01\"}\n", "", "", false},
		{"not UTF-8", "apiVersion: v1\nkind: Service\nmetadata: {name: \"\xff\"}\n", "", "", false},
		{"directive", "%YAML 1.2\n---\napiVersion: v1\nkind: Service\n", "", "", false},
		{"document end", "apiVersion: v1\nkind: Service\n...\n", "", "", false},
		{"block scalar kind", "apiVersion: v1\nkind: |\n  Service\n", "", "", false},
		{"complex key", "? apiVersion\n: v1\nkind: Service\n", "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, ok := readHeader([]byte(tc.text))
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				assert.Equal(t, tc.apiVersion, h.apiVersion)
				assert.Equal(t, tc.kind, h.kind)
			}
		})
	}
}

// FuzzReadHeader holds the line scan to the parser: whatever header it
// reads, a YAML parser reads the same apiVersion and kind from the document
// as a mapping with keys written once.
func FuzzReadHeader(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n",
		"---\n# c\nkind: CustomResourceDefinition\napiVersion: apiextensions.k8s.io/v1\nspec:\n  names: {kind: X}\n",
		"apiVersion: \"v1\"\nkind: 'Service'\nspec: |\n  kind: ConfigMap\n",
		"apiVersion: v1\r\nkind: Service\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		h, ok := readHeader(text)
		if !ok {
			return
		}
		node, err := yaml.Parse(string(text))
		if err != nil {
			return // malformed below the top level: the next reader rejects it
		}
		if node.YNode().Kind != yaml.MappingNode {
			t.Fatalf("readHeader found %+v in a document that is not a mapping", h)
		}
		if got := node.GetApiVersion(); got != h.apiVersion {
			t.Fatalf("apiVersion: line scan %q, parser %q", h.apiVersion, got)
		}
		if got := node.GetKind(); got != h.kind {
			t.Fatalf("kind: line scan %q, parser %q", h.kind, got)
		}
	})
}

// TestLoneCarriageReturn: YAML reads a carriage return that no line feed
// follows as a line break, the byte scans do not, so the header scan leaves
// such a document to the parser (CRLF pairs are fine).
func TestLoneCarriageReturn(t *testing.T) {
	for text, lone := range map[string]bool{
		"apiVersion: v1\nkind: Service\n":          false,
		"apiVersion: v1\r\nkind: Service\r\n":      false,
		"apiVersion: v1\rkind: Service\n":          true,
		"apiVersion: v1\nkind: Service\r":          true,
		"apiVersion: v1\r\r\nkind: Service\r\n":    true,
		"apiVersion: v1\nkind: Service\nx: a\rb\n": true,
	} {
		assert.Equal(t, lone, yamlnode.HasLoneCR([]byte(text)), "%q", text)
		_, ok := readHeader([]byte(text))
		assert.Equal(t, !lone, ok, "%q", text)
	}
}
