package hashing_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/testing/vectors"
)

func ptr[T any](v T) *T { return &v }

func TestDiscover(t *testing.T) {
	cmKey := func(name, key string, optional bool) corev1.EnvVar {
		return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr(optional)}}}
	}
	tests := []struct {
		name string
		spec corev1.PodSpec
		want []hashing.Use
	}{
		{name: "nothing", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}, want: []hashing.Use{}},
		{
			name: "volume without items is whole",
			spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}},
			want: []hashing.Use{{Kind: hashing.KindConfigMap, Name: "cm", All: true}},
		},
		{
			name: "secret volume items are keys",
			spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: "s", Optional: ptr(true), Items: []corev1.KeyToPath{{Key: "b"}, {Key: "a"}}}}}}},
			want: []hashing.Use{{Kind: hashing.KindSecret, Name: "s", Keys: []string{"a", "b"}, Optional: true}},
		},
		{
			name: "keys merge across containers, whole wins, optional only if every reference is",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Env: []corev1.EnvVar{cmKey("cm", "x", true)}}},
				Containers:     []corev1.Container{{Env: []corev1.EnvVar{cmKey("cm", "y", false), cmKey("other", "k", true), {Name: "PLAIN", Value: "1"}}}},
				EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}}}}}}},
			},
			want: []hashing.Use{
				{Kind: hashing.KindConfigMap, Name: "cm", Keys: []string{"x", "y"}},
				{Kind: hashing.KindConfigMap, Name: "other", Keys: []string{"k"}, Optional: true},
				{Kind: hashing.KindSecret, Name: "env", All: true},
			},
		},
		{
			name: "projected sources, image pull secrets, empty names ignored",
			spec: corev1.PodSpec{
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}, {Name: ""}},
				Volumes: []corev1.Volume{{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "pc"}, Items: []corev1.KeyToPath{{Key: "k"}}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "ps"}}},
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}},
				}}}}},
			},
			want: []hashing.Use{
				{Kind: hashing.KindConfigMap, Name: "pc", Keys: []string{"k"}},
				{Kind: hashing.KindSecret, Name: "ps", All: true},
				{Kind: hashing.KindSecret, Name: "pull", All: true, Optional: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, hashing.Discover(&tt.spec))
		})
	}
}

// baseline is vector 03: a workload consuming one key of a ConfigMap and one
// key of a Secret.
func baseline(t *testing.T) (vectors.Vector, []hashing.Content) {
	t.Helper()
	vs, err := vectors.Load()
	require.NoError(t, err)
	for _, v := range vs {
		if v.File == "03-key-precise-env.yaml" {
			c, err := v.ManifestContents()
			require.NoError(t, err)
			return v, c
		}
	}
	t.Fatal("vector 03 missing")
	return vectors.Vector{}, nil
}

func TestHashChangesOnlyWithConsumedContent(t *testing.T) {
	v, contents := baseline(t)
	want := v.Compute(contents)
	edit := func(kind hashing.Kind, key, value string) []hashing.Content {
		out := make([]hashing.Content, len(contents))
		for i, c := range contents {
			keys := make(map[string]hashing.Digest, len(c.Keys))
			for k, d := range c.Keys {
				keys[k] = d
			}
			if c.Kind == kind {
				keys[key] = hashing.DigestOf([]byte(value))
			}
			c.Keys = keys
			out[i] = c
		}
		return out
	}
	assert.Equal(t, want, v.Compute(edit(hashing.KindConfigMap, "UNUSED", "changed")), "unconsumed ConfigMap key")
	assert.Equal(t, want, v.Compute(edit(hashing.KindSecret, "other", "changed")), "unconsumed Secret key")
	assert.Equal(t, want, v.Compute(edit(hashing.KindConfigMap, "NEW_KEY", "x")), "added unconsumed key")
	assert.NotEqual(t, want, v.Compute(edit(hashing.KindConfigMap, "LOG_LEVEL", "debug")), "consumed ConfigMap key")
	assert.NotEqual(t, want, v.Compute(edit(hashing.KindSecret, "password", "hunter3")), "consumed Secret key")
	assert.NotEqual(t, want, v.Compute(contents[:1]), "a consumed object disappears")
}

func TestMetadataDoesNotMatter(t *testing.T) {
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "n"}, Data: map[string]string{"k": "v"}}
	b := a.DeepCopy()
	b.Labels = map[string]string{"helm.sh/chart": "x-2.0.0"}
	b.Annotations = map[string]string{"a": "b"}
	b.ResourceVersion = "99"
	b.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "helm"}}
	ca, err := hashing.ConfigMapContent(a)
	require.NoError(t, err)
	cb, err := hashing.ConfigMapContent(b)
	require.NoError(t, err)
	uses := []hashing.Use{{Kind: hashing.KindConfigMap, Name: "c", All: true}}
	assert.Equal(t,
		hashing.Compute("n", uses, vectors.Index([]hashing.Content{ca}), hashing.Options{}),
		hashing.Compute("n", uses, vectors.Index([]hashing.Content{cb}), hashing.Options{}))
}

func TestEncodingIsUnambiguous(t *testing.T) {
	// With k=v; joining, {"a": "b;c=d"} and {"a": "b", "c": "d"} collide.
	one := hashing.Content{Kind: hashing.KindConfigMap, Name: "c", Keys: map[string]hashing.Digest{"a": hashing.DigestOf([]byte("b;c=d"))}}
	two := hashing.Content{Kind: hashing.KindConfigMap, Name: "c", Keys: map[string]hashing.Digest{"a": hashing.DigestOf([]byte("b")), "c": hashing.DigestOf([]byte("d"))}}
	all := []hashing.Use{{Kind: hashing.KindConfigMap, Name: "c", All: true}}
	assert.NotEqual(t,
		hashing.Compute("n", all, vectors.Index([]hashing.Content{one}), hashing.Options{}),
		hashing.Compute("n", all, vectors.Index([]hashing.Content{two}), hashing.Options{}))
	// Namespace and name are separate fields: ns "a", name "b/c" is not ns "a/b", name "c".
	asCM := func(ns, name string) string {
		c := hashing.Content{Kind: hashing.KindConfigMap, Namespace: ns, Name: name, Keys: map[string]hashing.Digest{}}
		return hashing.Compute(ns, []hashing.Use{{Kind: hashing.KindConfigMap, Name: name, All: true}}, vectors.Index([]hashing.Content{c}), hashing.Options{})
	}
	assert.NotEqual(t, asCM("a", "b/c"), asCM("a/b", "c"))
	// Kind is domain-separated: a Secret and a ConfigMap of the same name and content differ.
	cm := hashing.Content{Kind: hashing.KindConfigMap, Name: "x", Keys: map[string]hashing.Digest{}}
	sec := hashing.Content{Kind: hashing.KindSecret, Name: "x", Keys: map[string]hashing.Digest{}}
	assert.NotEqual(t,
		hashing.Compute("n", []hashing.Use{{Kind: hashing.KindConfigMap, Name: "x", All: true}}, vectors.Index([]hashing.Content{cm}), hashing.Options{}),
		hashing.Compute("n", []hashing.Use{{Kind: hashing.KindSecret, Name: "x", All: true}}, vectors.Index([]hashing.Content{sec}), hashing.Options{}))
}

func TestKeyedMode(t *testing.T) {
	v, contents := baseline(t)
	uses := hashing.Discover(&v.PodSpec)
	plain := hashing.Compute(v.Namespace, uses, vectors.Index(contents), hashing.Options{})
	k1 := hashing.Compute(v.Namespace, uses, vectors.Index(contents), hashing.Options{Key: []byte("one")})
	k1again := hashing.Compute(v.Namespace, uses, vectors.Index(contents), hashing.Options{Key: []byte("one")})
	k2 := hashing.Compute(v.Namespace, uses, vectors.Index(contents), hashing.Options{Key: []byte("two")})
	assert.Equal(t, k1, k1again)
	assert.NotEqual(t, k1, k2)
	assert.NotEqual(t, plain, k1)
	assert.True(t, hashing.IsValue(plain))
	assert.True(t, hashing.IsValue(k1))
	assert.Contains(t, k1, hashing.KeyedPrefix)
	assert.False(t, hashing.IsValue("v1-sha256:xyz"))
}

func TestUseOrderAndKeyOrderDoNotMatter(t *testing.T) {
	c := hashing.Content{Kind: hashing.KindConfigMap, Name: "c", Keys: map[string]hashing.Digest{"a": {1}, "b": {2}}}
	s := hashing.Content{Kind: hashing.KindSecret, Name: "s", Keys: map[string]hashing.Digest{}}
	look := vectors.Index([]hashing.Content{c, s})
	a := hashing.Compute("n", []hashing.Use{{Kind: hashing.KindSecret, Name: "s", All: true}, {Kind: hashing.KindConfigMap, Name: "c", Keys: []string{"b", "a", "a"}}}, look, hashing.Options{})
	b := hashing.Compute("n", []hashing.Use{{Kind: hashing.KindConfigMap, Name: "c", Keys: []string{"a", "b"}}, {Kind: hashing.KindSecret, Name: "s", All: true}}, look, hashing.Options{})
	assert.Equal(t, a, b)
}

func TestConfigMapDuplicateKey(t *testing.T) {
	_, err := hashing.ConfigMapContent(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "n"},
		Data:       map[string]string{"k": "v"}, BinaryData: map[string][]byte{"k": []byte("v")},
	})
	require.ErrorContains(t, err, `ConfigMap n/c: key "k"`)
}
