package postrenderer_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/postrenderer"
)

// bom is the UTF-8 byte order mark that editors on Windows write at the start
// of a file.
const bom = "\ufeff"

// TestByteOrderMarks: files saved with a byte order mark and joined into one
// stream (for f in *.yaml; do echo ---; cat "$f"; done | confighash) carry a
// mark at the start of documents after the first. kubectl, Helm and kyaml
// read each document on its own, where a leading mark is not content;
// stream mode read it as part of the first key ("\ufeffapiVersion"), so the
// document had no apiVersion: a workload got no hash and a ConfigMap was not
// found, with no error. Each document must read as it does without the mark,
// and the marks stay in the output.
func TestByteOrderMarks(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n"
	const secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\nstringData:\n  token: s3cr3t\n"
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  template:\n    spec:\n      containers:\n      - name: api\n        envFrom:\n        - configMapRef:\n            name: settings\n        - secretRef:\n            name: token\n"
	// The first key is metadata: a new annotations block goes right after
	// the mark.
	const job = "metadata:\n  name: once\napiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    metadata: {}\n    spec:\n      containers:\n      - name: once\n        envFrom:\n        - configMapRef:\n            name: settings\n"
	const flow = `{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"}, "spec": {"template": {"spec": {"containers": [{"name": "a", "envFrom": [{"configMapRef": {"name": "settings"}}]}]}}}}` + "\n"
	cases := []struct {
		name string
		docs []string
	}{
		{"every file marked", []string{bom + cm, bom + secret, bom + deploy}},
		{"the ConfigMap marked", []string{deploy, bom + cm, secret}},
		{"the workload marked", []string{cm, secret, bom + deploy}},
		{"a workload whose first key is metadata", []string{cm, bom + job}},
		{"a JSON document", []string{cm, bom + flow}},
		{"CRLF line ends", []string{crlf(bom + cm), crlf(bom + secret), crlf(bom + deploy)}},
	}
	opts := inject.Options{DefaultNamespace: namespace}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			marked := "---\n" + strings.Join(tc.docs, "---\n")
			plain := strings.ReplaceAll(marked, bom, "")
			want, wantReport, err := postrenderer.Process([]byte(plain), opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(wantReport.Workloads) == 0 || wantReport.Workloads[0].Hash == "" {
				t.Fatalf("the unmarked stream hashes nothing: %+v", wantReport)
			}
			got, report, err := postrenderer.Process([]byte(marked), opts)
			if err != nil {
				t.Fatal(err)
			}
			if n, m := strings.Count(string(got), bom), strings.Count(marked, bom); n != m {
				t.Errorf("%d byte order marks in the output, %d in the input", n, m)
			}
			if unmarked := bytes.ReplaceAll(got, []byte(bom), nil); string(unmarked) != string(want) {
				t.Errorf("with the marks removed, the output is\n%s\nwant\n%s", unmarked, want)
			}
			if report.Configs != wantReport.Configs || len(report.Workloads) != len(wantReport.Workloads) {
				t.Errorf("read %d configs and %d workloads, want %d and %d", report.Configs, len(report.Workloads), wantReport.Configs, len(wantReport.Workloads))
			}
			again, _, err := postrenderer.Process(got, opts)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("a second run changed the output (error %v)", err)
			}
		})
	}
}

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
