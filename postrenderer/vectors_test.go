package postrenderer_test

import (
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
	vectors.Each(t, func(t *testing.T, v vectors.Vector) {
		input, err := v.Render()
		require.NoError(t, err)
		opts := inject.Options{Key: v.KeyBytes(), DefaultNamespace: v.Namespace}
		want, external := v.RenderExpected()

		_, r, err := postrenderer.Process([]byte(input), opts)
		require.NoError(t, err)
		require.Len(t, r.Workloads, 1)
		assert.Equal(t, want, r.Workloads[0].Hash, "stream mode")
		assert.Equal(t, strings.Join(external, ","), r.Workloads[0].ExternalValue(), "stream mode")

		nodes, err := (&kio.ByteReader{Reader: strings.NewReader(input)}).Read()
		require.NoError(t, err)
		var report inject.Report
		_, err = inject.Filter{Options: opts, Report: &report}.Filter(nodes)
		require.NoError(t, err)
		assert.Equal(t, want, report.Workloads[0].Hash, "KRM filter")
	})
}
