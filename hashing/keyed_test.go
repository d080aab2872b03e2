package hashing_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/hashing"
)

// pinUse is a workload reading one key of Secret shop/db (env valueFrom).
var pinUse = []hashing.Use{{Kind: hashing.KindSecret, Name: "db", Keys: []string{"pin"}}}

// renderSide hashes the Secret as the render-time tools see it: a manifest
// with stringData.
func renderSide(pin string, key []byte) string {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, StringData: map[string]string{"pin": pin}}
	return computeOne(hashing.SecretContent(s), key)
}

// clusterSide hashes the Secret as the controller sees it: the object read
// back from the API server (decoded data, no stringData, server metadata).
func clusterSide(pin string, key []byte) string {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", ResourceVersion: "42", UID: "0c5f"},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"pin": []byte(pin)},
	}
	return computeOne(hashing.SecretContent(s), key)
}

func computeOne(c hashing.Content, key []byte) string {
	lookup := func(kind hashing.Kind, name string) (hashing.Content, bool) {
		return c, kind == c.Kind && name == c.Name
	}
	return hashing.Compute("shop", pinUse, lookup, hashing.Options{Key: key})
}

// specValue builds the HASHING.md §4 encoding of pinUse by hand and renders
// it per §5: the plain SHA-256 without a key, HMAC-SHA256 under a key.
func specValue(pin string, key []byte) string {
	var enc []byte
	str := func(s string) {
		enc = binary.BigEndian.AppendUint32(enc, uint32(len(s)))
		enc = append(enc, s...)
	}
	enc = append(enc, "confighash.dev/hash/v1\n"...)
	enc = binary.BigEndian.AppendUint32(enc, 1) // one use
	str("Secret")
	str("shop")
	str("db")
	enc = append(enc, 1)                        // present
	enc = binary.BigEndian.AppendUint32(enc, 1) // one consumed key
	str("pin")
	enc = append(enc, 1) // the object has it
	digest := sha256.Sum256([]byte(pin))
	enc = append(enc, digest[:]...)
	if len(key) == 0 {
		sum := sha256.Sum256(enc)
		return hashing.PlainPrefix + hex.EncodeToString(sum[:])
	}
	m := hmac.New(sha256.New, key)
	_, _ = m.Write(enc)
	return hashing.KeyedPrefix + hex.EncodeToString(m.Sum(nil))
}

// TestKeyedModeSides holds the keyed-mode contract between the render-time
// tools and the controller: the same key gives the same hash on both sides,
// a different key a different hash, and no key the plain hash.
func TestKeyedModeSides(t *testing.T) {
	keyA, keyB := []byte("key-a"), []byte("key-b")
	tests := []struct {
		name                        string
		renderKey, clusterKey       []byte
		wantEqual                   bool
		renderPrefix, clusterPrefix string
	}{
		{name: "same key: same hash on both sides", renderKey: keyA, clusterKey: keyA, wantEqual: true,
			renderPrefix: hashing.KeyedPrefix, clusterPrefix: hashing.KeyedPrefix},
		{name: "different keys: different hashes", renderKey: keyA, clusterKey: keyB,
			renderPrefix: hashing.KeyedPrefix, clusterPrefix: hashing.KeyedPrefix},
		{name: "no key on either side: the plain hash", wantEqual: true,
			renderPrefix: hashing.PlainPrefix, clusterPrefix: hashing.PlainPrefix},
		{name: "an empty key is no key: the plain hash", renderKey: []byte{}, clusterKey: nil, wantEqual: true,
			renderPrefix: hashing.PlainPrefix, clusterPrefix: hashing.PlainPrefix},
		{name: "keyed render, controller without a key: another mode", renderKey: keyA,
			renderPrefix: hashing.KeyedPrefix, clusterPrefix: hashing.PlainPrefix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			render, cluster := renderSide("1234", tt.renderKey), clusterSide("1234", tt.clusterKey)
			assert.Equal(t, specValue("1234", tt.renderKey), render, "render side follows HASHING.md")
			assert.Equal(t, specValue("1234", tt.clusterKey), cluster, "cluster side follows HASHING.md")
			assert.Truef(t, hashing.IsValue(render), "%q", render)
			assert.Truef(t, hashing.IsValue(cluster), "%q", cluster)
			assert.Contains(t, render, tt.renderPrefix)
			assert.Contains(t, cluster, tt.clusterPrefix)
			if tt.wantEqual {
				assert.Equal(t, render, cluster)
			} else {
				assert.NotEqual(t, render, cluster)
			}
			// Either way, a change of the consumed value moves the hash.
			assert.NotEqual(t, render, renderSide("1235", tt.renderKey))
		})
	}
}

// TestKeyedModeStopsGuessing is why keyed mode exists: anyone who can read a
// Deployment can try every 4-digit PIN against a plain hash; against a keyed
// one, without the key, no guess matches.
func TestKeyedModeStopsGuessing(t *testing.T) {
	guess := func(annotation string) (string, bool) {
		for i := range 10000 {
			pin := fmt.Sprintf("%04d", i)
			if renderSide(pin, nil) == annotation {
				return pin, true
			}
		}
		return "", false
	}
	found, ok := guess(renderSide("4821", nil))
	require.True(t, ok, "a plain hash of a low-entropy secret can be brute-forced")
	assert.Equal(t, "4821", found)
	_, ok = guess(renderSide("4821", []byte("a-key-only-the-deployer-knows")))
	assert.False(t, ok, "a keyed hash gives nothing to test guesses against")
}

// The key id is the one in HASHING.md section 5 (computed independently:
// python3 -c "import hashlib; print(hashlib.sha256(b'confighash.dev/key-id/v1\n'+b'a-key').hexdigest()[:16])"),
// differs between keys and is empty without a key.
func TestKeyID(t *testing.T) {
	assert.Equal(t, "ecc58aa4c637408d", hashing.KeyID([]byte("a-key")))
	assert.NotEqual(t, hashing.KeyID([]byte("a-key")), hashing.KeyID([]byte("b-key")))
	assert.Empty(t, hashing.KeyID(nil))
	assert.Empty(t, hashing.KeyID([]byte{}))
}
