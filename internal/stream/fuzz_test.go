package stream_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/stream"
)

// FuzzProcess checks the byte editor against the kyaml filter: for any input
// both accept, the edited bytes must mean exactly what the filter's nodes
// mean, and a second run must change nothing.
func FuzzProcess(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/input.yaml")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		out, report, err := stream.Process(input, inject.Options{})
		if err != nil {
			return
		}
		nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(input), OmitReaderAnnotations: true}).Read()
		if err != nil || len(nodes) != report.Documents {
			// kio splits some layouts differently ("--- {...}" on one line,
			// "---#"): there is nothing to compare.
			return
		}
		want, err := inject.Filter{}.Filter(nodes)
		if err != nil {
			t.Fatalf("stream accepted what the filter refused: %v", err)
		}
		got, err := (&kio.ByteReader{Reader: bytes.NewReader(out), OmitReaderAnnotations: true}).Read()
		if err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, out)
		}
		wantJSON, err := asJSON(want)
		if err != nil {
			return // not representable as JSON, so not a Kubernetes object
		}
		gotJSON, err := asJSON(got)
		if err != nil || !reflect.DeepEqual(wantJSON, gotJSON) {
			t.Fatalf("byte edits differ from the filter:\ninput:\n%s\noutput:\n%s", input, out)
		}
		again, _, err := stream.Process(out, inject.Options{})
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("second run changed the output (err %v)", err)
		}
	})
}

func asJSON(nodes []*yaml.RNode) ([]any, error) {
	var out []any
	for _, n := range nodes {
		raw, err := n.MarshalJSON()
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
