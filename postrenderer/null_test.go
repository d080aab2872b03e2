package postrenderer_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

// TestNullDocuments: a document that is only a YAML null (a template such as
// {{ toYaml .Values.extra }} of a value that is not set renders "null") is no
// object to kubectl, Helm and kyaml, which skip it. Stream mode refused the
// whole render ("document 2 is not an object"), so a chart that installs
// without confighash failed with it. Such a document is copied as it is and
// counted as no document, and the rest is hashed as without it.
func TestNullDocuments(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n"
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  template:\n    spec:\n      containers:\n      - name: api\n        envFrom:\n        - configMapRef:\n            name: settings\n"
	nulls := []string{
		"null\n",
		"~\n",
		"Null\n",
		"NULL\n",
		"null # nothing to add\n",
		"# Source: chart/templates/extra.yaml\nnull\n",
		"\nnull\n\n",
	}
	opts := inject.Options{DefaultNamespace: namespace}
	want, wantReport, err := postrenderer.Process([]byte("---\n"+cm+"---\n"+deploy), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nulls {
		for _, layout := range []struct {
			name   string
			stream func(null string) string
		}{
			{"between", func(null string) string { return "---\n" + cm + "---\n" + null + "---\n" + deploy }},
			{"first", func(null string) string { return null + "---\n" + cm + "---\n" + deploy }},
			{"last", func(null string) string { return "---\n" + cm + "---\n" + deploy + "---\n" + null }},
			{"CRLF", func(null string) string { return crlf("---\n" + cm + "---\n" + null + "---\n" + deploy) }},
		} {
			t.Run(fmt.Sprintf("%q %s", n, layout.name), func(t *testing.T) {
				in := layout.stream(n)
				out, report, err := postrenderer.Process([]byte(in), opts)
				if err != nil {
					t.Fatal(err)
				}
				if report.Documents != wantReport.Documents || len(report.Workloads) != 1 || report.Workloads[0].Hash != wantReport.Workloads[0].Hash {
					t.Errorf("read %d documents and %+v, want %d and the hash %s", report.Documents, report.Workloads, wantReport.Documents, wantReport.Workloads[0].Hash)
				}
				// The null document stays where it was, byte for byte.
				kept := strings.Contains(string(out), n) || strings.Contains(string(out), crlf(n))
				if !kept || strings.Count(string(out), "confighash.dev/hash") != 1 {
					t.Errorf("output:\n%s", out)
				}
				differential(t, []byte(in), opts)
			})
		}
	}
	if strings.Count(string(want), "confighash.dev/hash") != 1 {
		t.Fatalf("the stream without a null document is not hashed:\n%s", want)
	}
}

// TestNullDocumentHelm renders a chart with a template that renders "null"
// with the real Helm 3 and Helm 4: it renders with confighash as it does
// without it, and the workload is hashed as in the chart without that
// template.
func TestNullDocumentHelm(t *testing.T) {
	for _, version := range []int{3, 4} {
		t.Run(fmt.Sprintf("helm%d", version), func(t *testing.T) {
			h := newHelm(t, version)
			without := hashes(testtools.Objects(t, h.template(t, exampleChart(t), true)))
			chart := copyChart(t, exampleChart(t))
			writeFile(t, filepath.Join(chart, "templates", "extra.yaml"), "{{ toYaml .Values.notSet }}\n")
			with := hashes(testtools.Objects(t, h.template(t, chart, true)))
			if len(without) == 0 {
				t.Fatal("the example chart renders no hash")
			}
			assertByWorkload(t, h.String(), with, without)
		})
	}
}
