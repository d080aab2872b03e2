package rolldiff_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/rolldiff"
)

// stream is a render of n ConfigMaps and n Deployments reading them.
func stream(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: shop}\ndata: {A: \"%d\"}\n---\n", i, i)
		fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d-%d, namespace: shop}\nspec:\n  template:\n    spec:\n"+
			"      containers:\n      - name: c\n        image: nginx\n        envFrom: [{configMapRef: {name: cm-%d}}]\n---\n", i, i)
	}
	return []byte(b.String())
}

// allocatedPerByte is what reading input allocates, per byte of input.
func allocatedPerByte(t *testing.T, input []byte) float64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	docs, _, err := rolldiff.ReadObjects(input, inject.Options{})
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(len(input))
}

// TestReadingIsLinear: what diff, verify and explain allocate to read a
// render grows with its size, not with its size times its documents. Before,
// each document copied the whole input to count the lines before it: a 14 MB
// render of 8,000 documents took 148 s to diff and verify of a 7 MB one 8 s
// (render and explain: under a second). Allocation, not time, is measured:
// a ratio in one run.
func TestReadingIsLinear(t *testing.T) {
	small, large := stream(250), stream(2000)
	perByteSmall, perByteLarge := allocatedPerByte(t, small), allocatedPerByte(t, large)
	t.Logf("allocated per input byte: %.1f for %d bytes, %.1f for %d bytes", perByteSmall, len(small), perByteLarge, len(large))
	assert.Less(t, perByteLarge, 2*perByteSmall, "8 times the documents should not cost more per byte")
}
