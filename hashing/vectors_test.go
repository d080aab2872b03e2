package hashing_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/vectors"
)

// TestVectors checks every shared vector in both of its forms: the manifest a
// user writes and the object the API server returns must hash the same, and
// equal the value computed independently from HASHING.md.
func TestVectors(t *testing.T) {
	vectors.Each(t, func(t *testing.T, v vectors.Vector) {
		manifest, err := v.ManifestContents()
		require.NoError(t, err)
		live, err := v.APIServerContents()
		require.NoError(t, err)
		assert.Equal(t, v.Expected, v.Compute(manifest), "manifest form")
		assert.Equal(t, v.Expected, v.Compute(live), "API-server form")
	})
}
