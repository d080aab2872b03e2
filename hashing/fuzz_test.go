package hashing_test

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/confighash/confighash/hashing"
)

// FuzzDiscover feeds arbitrary pod specs to Discover and checks its
// invariants: sorted, one use per object, keys sorted and unique, no empty
// names, and stable across calls.
func FuzzDiscover(f *testing.F) {
	f.Add(`{"containers":[{"envFrom":[{"configMapRef":{"name":"a"}}],"env":[{"name":"x","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]}]}`)
	f.Add(`{"volumes":[{"name":"v","projected":{"sources":[{"configMap":{"name":"c","items":[{"key":"b","path":"b"},{"key":"a","path":"a"}]}}]}}],"imagePullSecrets":[{"name":"p"}]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		var spec corev1.PodSpec
		if json.Unmarshal([]byte(raw), &spec) != nil {
			return
		}
		uses := hashing.Discover(&spec)
		seen := map[string]bool{}
		for i, u := range uses {
			if u.Name == "" {
				t.Fatalf("use %d has no name", i)
			}
			if seen[u.Ref()] {
				t.Fatalf("%s listed twice", u.Ref())
			}
			seen[u.Ref()] = true
			if u.All && len(u.Keys) > 0 {
				t.Fatalf("%s: whole use with keys", u.Ref())
			}
			for j := 1; j < len(u.Keys); j++ {
				if u.Keys[j-1] >= u.Keys[j] {
					t.Fatalf("%s: keys not sorted and unique: %q", u.Ref(), u.Keys)
				}
			}
			if i > 0 && (uses[i-1].Kind > u.Kind || uses[i-1].Kind == u.Kind && uses[i-1].Name >= u.Name) {
				t.Fatalf("uses not sorted at %d", i)
			}
		}
		again := hashing.Discover(&spec)
		if len(again) != len(uses) {
			t.Fatal("Discover is not stable")
		}
	})
}

// FuzzNormalise checks that a Secret's content does not depend on whether a
// value arrives as data or as stringData, and that the hash is deterministic.
func FuzzNormalise(f *testing.F) {
	f.Add("password", []byte("s3cr3t"), "other", "x")
	f.Add("", []byte{0, 1, 2}, "k", "")
	f.Fuzz(func(t *testing.T, key string, value []byte, key2, value2 string) {
		asData := &corev1.Secret{Data: map[string][]byte{key: value, key2: []byte(value2)}}
		asString := &corev1.Secret{StringData: map[string]string{key: string(value)}, Data: map[string][]byte{key2: []byte(value2)}}
		if key == key2 {
			asData.Data = map[string][]byte{key: []byte(value2)}
			asString = &corev1.Secret{Data: map[string][]byte{key: value}, StringData: map[string]string{key: value2}}
		}
		a, b := hashing.SecretContent(asData), hashing.SecretContent(asString)
		uses := []hashing.Use{{Kind: hashing.KindSecret, All: true}}
		look := func(c hashing.Content) hashing.Lookup {
			return func(hashing.Kind, string) (hashing.Content, bool) { return c, true }
		}
		ha := hashing.Compute("n", uses, look(a), hashing.Options{})
		hb := hashing.Compute("n", uses, look(b), hashing.Options{})
		if ha != hb {
			t.Fatalf("data vs stringData: %s != %s", ha, hb)
		}
		if !hashing.IsValue(ha) {
			t.Fatalf("not a value: %s", ha)
		}
	})
}
