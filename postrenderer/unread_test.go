package postrenderer_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

// TestUnreadDocuments pins down what stream mode promises for the documents
// it copies without parsing (kinds that cannot matter, found by a line scan
// of the top level): they come out byte for byte; what the scan can judge
// (bytes YAML forbids, a top-level key written twice) is still an error
// naming the document; and what is wrong below the top level is left to the
// next reader. Helm is that reader, and it parses every template before its
// post-renderer runs, so a malformed document never reaches confighash from
// Helm 3 or Helm 4.
func TestUnreadDocuments(t *testing.T) {
	// The workload of format_test.go and one of the configs it reads; the
	// document under test is the third.
	const parsed = workload + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: b}\n"
	for _, tc := range []struct {
		name, doc, err string
	}{
		{"a key twice at the top level", "apiVersion: v1\nkind: Service\nspec: {}\nspec: {}\n", `document 2: key "spec" appears twice`},
		{"a control character", "apiVersion: v1\nkind: Service\nmetadata: {name: \"a\x01\"}\n", "document 2: line 18: a character YAML does not allow written as it is (U+0001, a control character)"},
		{"not a document", "apiVersion: v1\nkind: Service\n- a\n", "document 2:"},
		{"malformed below the top level", "apiVersion: v1\nkind: Service\nspec:\n  ports: [a, b\n  selector: {}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := parsed + "---\n" + tc.doc
			out, _, err := postrenderer.Process([]byte(input), inject.Options{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if out != nil {
					t.Errorf("partial output on error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(string(out), "---\n"+tc.doc) {
				t.Errorf("the unread document is not copied byte for byte:\n%s", out)
			}
		})
	}

	chart := filepath.Join(testtools.RepoRoot(t), "postrenderer", "testdata", "malformed")
	for _, version := range []int{3, 4} {
		h := newHelm(t, version)
		args := append([]string{"template", release, chart, "--namespace", namespace}, h.postRenderer()...)
		res := h.Run(t, nil, args...)
		// Helm 3: "YAML parse error on malformed/templates/service.yaml";
		// Helm 4: "parsing malformed/templates/service.yaml: MalformedYAMLError".
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, "malformed/templates/service.yaml") || !strings.Contains(res.Stderr, "did not find expected") {
			t.Errorf("%s passed a malformed template to its post-renderer: exit %d\n%s", h, res.ExitCode, res.Stderr)
		}
	}
}
