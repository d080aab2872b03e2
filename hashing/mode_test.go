package hashing_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/confighash/confighash/hashing"
)

// TestCompareMode: why a hash value cannot be compared with a reader's, for
// each mode of the value and of the reader.
func TestCompareMode(t *testing.T) {
	plain := hashing.PlainPrefix + strings.Repeat("0", 64)
	keyed := hashing.KeyedPrefix + strings.Repeat("0", 64)
	tests := []struct {
		name                     string
		value, valueKeyID, keyID string
		want                     hashing.Mismatch
	}{
		{"plain, no key", plain, "", "", ""},
		{"plain, a key", plain, "", "k1", hashing.MismatchUnkeyed},
		{"keyed, no key", keyed, "k1", "", hashing.MismatchKeyed},
		{"keyed without a key id, no key", keyed, "", "", hashing.MismatchKeyed},
		{"keyed, the same key", keyed, "k1", "k1", ""},
		{"keyed, another key", keyed, "k2", "k1", hashing.MismatchOtherKey},
		{"keyed, no key id written", keyed, "", "k1", ""},
		{"plain next to a key id, no key", plain, "k1", "", ""},
		{"another version, a key", "v9-sha256:" + strings.Repeat("0", 64), "", "k1", hashing.MismatchUnknown},
		{"another version, no key", "v9-sha256:00", "", "", hashing.MismatchUnknown},
		{"short digest", hashing.PlainPrefix + "00", "", "", hashing.MismatchUnknown},
		{"not hex", hashing.KeyedPrefix + strings.Repeat("g", 64), "k1", "k1", hashing.MismatchUnknown},
		{"empty", "", "", "", hashing.MismatchUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, hashing.CompareMode(tt.value, tt.valueKeyID, tt.keyID))
		})
	}
}
