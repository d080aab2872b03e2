package postrenderer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/postrenderer"
)

// TestErrorsNameLinesOfTheStream: an error about a document names lines of
// the whole stream, counted from 1, as an editor shows them, whatever comes
// before the document: the line a user opens is the line that is wrong.
func TestErrorsNameLinesOfTheStream(t *testing.T) {
	const before = "# Source: chart/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n---\n# Source: chart/templates/bad.yaml\n"
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n"
	tests := []struct {
		name string
		doc  string
		// want is the error, %d standing for the stream lines of marks.
		want  string
		marks []string
	}{
		{"a key written twice", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n  k: v\n  k: w\n",
			`key "k" appears twice (lines %d and %d)`, []string{"k: v\n  k: w", "k: w"}},
		{"a field of the wrong type", deploy + "        envFrom: [{configMapRef: {name: 1}}]\n",
			"line %d: containers[0].envFrom[0].configMapRef.name: expected a string", []string{"envFrom:"}},
		{"an unclosed flow", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n  k: [x\n",
			"yaml: line %d: did not find expected ',' or ']'", []string{"k: [x"}},
		{"an unterminated quote", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n  k: \"x\n",
			"yaml: line %d: found unexpected end of stream", []string{"k: \"x"}},
		{"an alias to no anchor", "apiVersion: v1\nkind: Secret\nmetadata: {name: b}\nstringData:\n  p: *pw\n",
			"line %d: an alias", []string{"*pw"}},
		{"text after a document marker", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n--- {a: b}\nx: 1\n",
			"line %d: text after the document marker", []string{"--- {a: b}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, sep := range []string{"\n", "\r\n"} {
				stream := strings.ReplaceAll(before+tc.doc, "\n", sep)
				lines := make([]any, len(tc.marks))
				for i, m := range tc.marks {
					at := strings.Index(stream, strings.ReplaceAll(m, "\n", sep))
					require.GreaterOrEqual(t, at, 0, m)
					lines[i] = strings.Count(stream[:at], "\n") + 1
				}
				_, _, err := postrenderer.Process([]byte(stream), inject.Options{})
				require.Error(t, err)
				assert.Contains(t, err.Error(), fmt.Sprintf(tc.want, lines...), "line ends %q", sep)
			}
		})
	}
}

// TestHelm4ErrorsNameTheFileAndNoLine: in the stream Helm 4 writes anew for
// its post-renderer (each document with its annotation, no "# Source:"
// comment), an error names the template file from the annotation and no
// line of that text, which no command prints; the object, field or key
// it names finds the place in the template.
func TestHelm4ErrorsNameTheFileAndNoLine(t *testing.T) {
	meta := func(name, file string) string {
		return "metadata:\n  name: " + name + "\n  annotations:\n    postrenderer.helm.sh/postrender-filename: '" + file + "'\n"
	}
	const cm = "apiVersion: v1\nkind: ConfigMap\n"
	first := "---\n" + cm + meta("a", "chart/templates/a.yaml") + "data:\n  k: v\n"
	deploy := "apiVersion: apps/v1\nkind: Deployment\n" + meta("web", "chart/templates/web.yaml") +
		"spec:\n  template:\n    spec:\n      containers:\n      - name: c\n"
	tests := []struct {
		name, doc, want string
	}{
		{"a key written twice", cm + meta("b", "chart/templates/b.yaml") + "data:\n  k: v\n  k: w\n",
			`document 1, chart/templates/b.yaml: data: key "k" appears twice; the API server would keep only one`},
		{"a field of the wrong type", deploy + "        envFrom: [{configMapRef: {name: 1}}]\n",
			"Deployment web (document 1, chart/templates/web.yaml): spec.template.spec: containers[0].envFrom[0].configMapRef.name: expected a string"},
		{"a merge key that merges no map", cm + meta("m", "chart/templates/m.yaml") + "data:\n  <<: 5\n",
			"document 1, chart/templates/m.yaml: data: a merge key (<<) takes a map or a list of maps"},
		{"a ConfigMap written twice, read by the scanner", cm + meta("a", "chart/templates/again.yaml") + "data:\n  k: v\n",
			"ConfigMap a (document 1, chart/templates/again.yaml): the stream holds this ConfigMap twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := postrenderer.Process([]byte(first+"---\n"+tc.doc), inject.Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotRegexp(t, `\blines? \d`, err.Error())
		})
	}
}
