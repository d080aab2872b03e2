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
	// Patterns of the shared corpus (argo-cd, kube-prometheus): one
	// ConfigMap read key by key, optional, by many env entries; a Secret
	// volume with items and optional; the same Secret read whole by one
	// container and by key by another; a projected service account token
	// next to config sources; a volume naming neither kind.
	f.Add(`{"containers":[{"name":"a","env":[{"name":"A","valueFrom":{"configMapKeyRef":{"name":"argocd-cmd-params-cm","key":"server.insecure","optional":true}}},{"name":"B","valueFrom":{"configMapKeyRef":{"name":"argocd-cmd-params-cm","key":"server.basehref","optional":true}}},{"name":"REDIS_PASSWORD","valueFrom":{"secretKeyRef":{"name":"argocd-redis","key":"auth"}}}]}]}`)
	f.Add(`{"volumes":[{"name":"tls","secret":{"secretName":"argocd-repo-server-tls","optional":true,"items":[{"key":"tls.crt","path":"tls.crt"},{"key":"tls.key","path":"tls.key"},{"key":"ca.crt","path":"ca.crt"}]}},{"name":"known","configMap":{"name":"argocd-ssh-known-hosts-cm"}},{"name":"tmp","emptyDir":{}}]}`)
	f.Add(`{"initContainers":[{"name":"i","envFrom":[{"secretRef":{"name":"s"}}]}],"containers":[{"name":"a","env":[{"name":"X","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]}]}`)
	f.Add(`{"volumes":[{"name":"p","projected":{"sources":[{"serviceAccountToken":{"path":"token"}},{"secret":{"name":"grafana-datasources","optional":false}},{"configMap":{"name":"grafana-dashboards"}},{"downwardAPI":{"items":[{"path":"labels","fieldRef":{"fieldPath":"metadata.labels"}}]}}]}}]}`)
	f.Add(`{"ephemeralContainers":[{"name":"debug","envFrom":[{"configMapRef":{"name":"c","optional":true},"prefix":"P_"}]}],"volumes":[{"name":"empty","configMap":{"name":""}}]}`)
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
	// Keys and values as the shared corpus writes them: a YAML document
	// as one key's value, PEM with and without its final newline, the same
	// key as both data and stringData, a value of one space.
	f.Add("alertmanager.yaml", []byte("\"global\":\n  \"resolve_timeout\": \"5m\"\n"), "alertmanager.yaml", "route: {}")
	f.Add("tls.crt", []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), "tls.key", "-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----")
	f.Add("auth", []byte("\xff\xfe"), "server.secretkey", " ")
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
