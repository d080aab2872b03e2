package postrenderer_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/postrenderer"
)

// TestDocumentSeparators holds stream mode to how kubectl splits a stream
// (k8s.io/apimachinery's YAMLOrJSONDecoder, which kubectl apply and Helm's
// install read with): a line that starts with "---" separates documents
// when nothing but white space or a comment follows, "---#c" included; any
// other text after it ("--- !!map", "--- {a: b}", "---x") is an error to
// kubectl and to kustomize. A document that follows another without a "---"
// line (after "...", or JSON objects one after the other) is read by
// yaml.v3, kyaml and Helm as nothing, while kubectl applies every object of
// a JSON stream: stream mode hashed the first and let the others through
// without a hash. Both are refused with an error naming the document and
// the line (of the stream, from 1), and nothing is written.
func TestDocumentSeparators(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: one\n"
	const secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  p: CANARY-s3cr3t\n"
	const secretJSON = `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "stringData": {"p": "CANARY-s3cr3t"}}` + "\n"
	const cmJSON = `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "one"}}` + "\n"
	const deployJSON = `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"template": {"spec": {"containers": [{"name": "web", "envFrom": [{"configMapRef": {"name": "cfg"}}]}]}}}}` + "\n"
	opts := inject.Options{DefaultNamespace: namespace}
	want, wantReport, err := postrenderer.Process([]byte(cm+"---\n"+secret+"---\n"+workload), opts)
	if err != nil || len(wantReport.Workloads) != 1 {
		t.Fatalf("the plain stream: %v, %+v", err, wantReport)
	}
	for _, tc := range []struct {
		name    string
		input   string
		kubectl int    // objects kubectl reads, -1 for an error
		err     string // in stream mode's error; "" for the hash of the plain stream
	}{
		{"a comment right after the marker", cm + "---#c\n" + secret + "--- # c\n" + workload, 3, ""},
		{"a comment right after the marker, after a comment", cm + "---\n# c\n---#c\n" + secret + "---\n" + workload, 3, ""},
		{"the first line a marker and a comment", "---#c\n" + cm + "---\n" + secret + "---\n" + workload, -1,
			`document 0: line 1: kubectl reads "---#" here as the first line of the document`},
		{"a marker and a comment after another marker", cm + "---\n---#c\n" + secret + "---\n" + workload, -1,
			`document 1: line 8: kubectl reads "---#" here as the first line of the document`},
		{"CRLF, a comment right after the marker", crlf(cm + "---#c\n" + secret + "---\n" + workload), 3, ""},
		{"a tag after the marker", cm + "---\n" + secret + "--- !!map\n" + workload, -1,
			`document 2: line 14: text after the document marker "---"`},
		{"a document on the marker line", cm + "---\n" + workload + "--- " + strings.TrimSpace(secretJSON) + "\n", -1,
			`document 2: line 17: text after the document marker "---"`},
		{"a block scalar after the marker", cm + "--- |\n  text\n---\n" + workload, -1,
			`document 1: line 7: text after the document marker "---"`},
		{"a word glued to the marker", cm + "---\n" + secret + "---x\n" + workload, -1,
			`document 1: line 14: text after the document marker "---"`},
		{"four dashes", cm + "----\n" + secret, -1,
			`document 0: line 7: text after the document marker "---"`},
		{"JSON objects one after the other", cmJSON + deployJSON, 2,
			`document 0: another document follows this one without a "---" line`},
		{"JSON objects after a marker", "---\n" + cmJSON + deployJSON, 1,
			`document 0: another document follows this one without a "---" line`},
		{"a Secret, then a JSON object", secretJSON + deployJSON, 2,
			`document 0: another document follows this one without a "---" line`},
		{"a directive after the end marker", cm + "...\n%YAML 1.1\n---\n" + secret + "---\n" + workload, 3, ""},
		{"a document after the end marker", cm + "...\n" + workload, 1,
			`document 0: line 8: another document follows this one without a "---" line`},
		{"a Service, then a document after the end marker", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n...\n" + cm, 1,
			`document 0: line 6: another document follows this one without a "---" line`},
		{"a Secret, then a document after the end marker", cm + "---\n" + secret + "...\n" + workload, 2,
			`document 1: line 15: another document follows this one without a "---" line`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := kubectlObjects(tc.input); n != tc.kubectl {
				t.Errorf("kubectl reads %d objects, want %d", n, tc.kubectl)
			}
			out, report, err := postrenderer.Process([]byte(tc.input), opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if out != nil {
					t.Errorf("output on error:\n%s", out)
				}
				if strings.Contains(err.Error(), "CANARY") {
					t.Errorf("the error shows a Secret value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(report.Workloads) != 1 || report.Workloads[0].Hash != wantReport.Workloads[0].Hash {
				t.Errorf("workloads %+v, want the hash %s", report.Workloads, wantReport.Workloads[0].Hash)
			}
			assertAnnotationLinesOnly(t, tc.input, string(out), inject.DefaultPrefix)
			if strings.Contains(tc.input, "\r") {
				return
			}
			// Without the comments, the output is that of the plain stream.
			plain := strings.NewReplacer("...\n%YAML 1.1\n", "", "---\n# c\n", "", "---#c\n", "---\n", "--- # c\n", "---\n").Replace(string(out))
			if strings.TrimPrefix(plain, "---\n") != string(want) {
				t.Errorf("output\n%s\nwant, with its separator lines\n%s", out, want)
			}
		})
	}
}

// kubectlObjects returns how many objects kubectl reads from a stream, or
// -1 if it refuses it.
func kubectlObjects(stream string) int {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	n := 0
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			return -1
		}
		if obj != nil {
			n++
		}
	}
}
