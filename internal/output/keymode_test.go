package output

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/confighash/confighash/hashing"
)

// TestKeyMismatch: the cause diff and status give for a render-time hash
// made in another HMAC mode, for each mode of the hash and of the report.
func TestKeyMismatch(t *testing.T) {
	plain := hashing.PlainPrefix + strings.Repeat("0", 64)
	keyed := hashing.KeyedPrefix + strings.Repeat("0", 64)
	tests := []struct {
		name                     string
		hash, renderKeyID, keyID string
		want                     string
	}{
		{"plain, no key", plain, "", "", ""},
		{"plain, a key", plain, "", "k1", KeyMismatchUnkeyed},
		{"keyed, no key", keyed, "k1", "", KeyMismatchKeyed},
		{"keyed, the same key", keyed, "k1", "k1", ""},
		{"keyed, another key", keyed, "k2", "k1", KeyMismatchOtherKey},
		{"keyed, no key id written", keyed, "", "k1", ""},
		{"no hash value, a key", "v9-sha256:00", "", "k1", ""},
		{"no hash value, no key", "v9-sha256:00", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, KeyMismatch(tt.hash, tt.renderKeyID, tt.keyID))
		})
	}
}
