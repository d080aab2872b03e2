package postrenderer_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/vectors"
	"github.com/confighash/confighash/postrenderer"
)

// TestVectorsAtRenderTime renders every shared vector — its manifest-form
// objects plus a Deployment with its pod spec — through the stream mode and
// the kio filter (the KRM path), and expects the vector's value from both.
func TestVectorsAtRenderTime(t *testing.T) {
	vs, err := vectors.Load()
	require.NoError(t, err)
	for _, v := range vs {
		t.Run(v.File, func(t *testing.T) {
			spec, err := json.Marshal(v.PodSpec)
			require.NoError(t, err)
			deployment := `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"}, "spec": {"template": {"spec": ` + string(spec) + `}}}`
			input := []byte(v.Manifest + "\n---\n" + deployment + "\n")
			opts := inject.Options{Key: v.KeyBytes(), DefaultNamespace: v.Namespace}
			want, external := v.Expected, ""
			if v.RenderTime != nil {
				want, external = v.RenderTime.Expected, strings.Join(v.RenderTime.External, ",")
			}

			_, r, err := postrenderer.Process(input, opts)
			require.NoError(t, err)
			require.Len(t, r.Workloads, 1)
			assert.Equal(t, want, r.Workloads[0].Hash, "stream mode")
			assert.Equal(t, external, r.Workloads[0].ExternalValue(), "stream mode")

			nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(input)}).Read()
			require.NoError(t, err)
			var report inject.Report
			_, err = inject.Filter{Options: opts, Report: &report}.Filter(nodes)
			require.NoError(t, err)
			assert.Equal(t, want, report.Workloads[0].Hash, "KRM filter")
		})
	}
}
