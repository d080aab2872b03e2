package postrenderer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// TestNothingRendered: a chart whose templates render no object (everything
// behind a value that is off, only NOTES.txt, only comments) renders and
// succeeds with confighash as the post-renderer as it does without one. Helm
// 4 refuses a post-renderer plugin's output that is only white space
// ("produced empty output"), even when its input was empty.
func TestNothingRendered(t *testing.T) {
	cases := []struct {
		name      string
		templates map[string]string
	}{
		{"every template off", map[string]string{
			"cm.yaml":     "{{- if .Values.enabled }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n{{- end }}\n",
			"deploy.yaml": "{{- if .Values.enabled }}\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n{{- end }}\n",
		}},
		{"only NOTES.txt", map[string]string{"NOTES.txt": "Nothing to install.\n"}},
		{"only comments", map[string]string{"comment.yaml": "# nothing here yet\n---\n# nor here\n"}},
	}
	for _, tc := range cases {
		for _, version := range []int{3, 4} {
			t.Run(fmt.Sprintf("%s/helm%d", tc.name, version), func(t *testing.T) {
				chart := filepath.Join(t.TempDir(), "empty")
				if err := os.MkdirAll(filepath.Join(chart, "templates"), 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(chart, "Chart.yaml"), "apiVersion: v2\nname: empty\nversion: 0.1.0\n")
				writeFile(t, filepath.Join(chart, "values.yaml"), "enabled: false\n")
				for name, text := range tc.templates {
					writeFile(t, filepath.Join(chart, "templates", name), text)
				}
				h := newHelm(t, version)
				plain := h.template(t, chart, false)
				post := h.template(t, chart, true) // fails the test unless helm succeeds
				if n := len(testtools.Objects(t, post)); n != 0 || len(testtools.Objects(t, plain)) != 0 {
					t.Errorf("%s printed %d objects with confighash, %d without", h, n, len(testtools.Objects(t, plain)))
				}
				// Helm 3 prints what its post-renderer wrote; Helm 4 drops
				// documents that are only comments from any post-renderer's
				// output.
				if version == 3 && post != plain {
					t.Errorf("%s with confighash printed\n%q\nwithout it\n%q", h, post, plain)
				}
			})
		}
	}
}
