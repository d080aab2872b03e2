package controller

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/confighash/confighash/internal/testing/vectors"
)

func cachedDeployment(t *testing.T, ann map[string]string) *cachedWorkload {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1", ResourceVersion: "7", Generation: 3, Annotations: ann,
		CreationTimestamp: metav1.Unix(1795000000, 0)}}
	d.Spec.Template.Annotations = map[string]string{"confighash.dev/hash": "v1-sha256:ab"}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "app:1", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}}
	out, err := TransformWorkload(d)
	require.NoError(t, err)
	w, ok := out.(*cachedWorkload)
	require.True(t, ok, "%T", out)
	return w
}

// TestCachedWorkload: the cached form answers the metadata a decision
// reads, its pod template reduced, a copy independent of it, and a damaged
// pack as an error naming the workload.
func TestCachedWorkload(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]string
		want map[string]string
	}{
		{name: "no annotations"},
		{name: "annotations, without last-applied", ann: map[string]string{"b": "2", "a": "1", lastApplied: "{}"}, want: map[string]string{"a": "1", "b": "2"}},
		{name: "only last-applied", ann: map[string]string{lastApplied: "{}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := cachedDeployment(t, tt.ann)
			assert.Equal(t, "web", w.GetName())
			assert.Equal(t, "shop", w.GetNamespace())
			assert.Equal(t, types.UID("u1"), w.GetUID())
			assert.Equal(t, "7", w.GetResourceVersion())
			assert.Equal(t, int64(3), w.GetGeneration())
			assert.Equal(t, metav1.Unix(1795000000, 0), w.GetCreationTimestamp())
			assert.Equal(t, tt.want, w.GetAnnotations())
			tmpl, err := PodTemplate(w)
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"confighash.dev/hash": "v1-sha256:ab"}, tmpl.Annotations)
			assert.Empty(t, tmpl.Spec.Containers[0].Image, "reduced")
			assert.Equal(t, "cfg", tmpl.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name)

			c := w.DeepCopyObject().(*cachedWorkload)
			c.SetAnnotations(map[string]string{"x": "y"})
			c.SetResourceVersion("8")
			assert.Equal(t, tt.want, w.GetAnnotations(), "the copy is independent")
			assert.Equal(t, "7", w.GetResourceVersion())

			damaged := w.DeepCopyObject().(*cachedWorkload)
			damaged.uses = damaged.uses[:len(damaged.uses)-3]
			_, err = PodTemplate(damaged)
			assert.ErrorContains(t, err, "Deployment shop/web: cached pod template")
		})
	}
}

// TestStoresGet: a cached workload is read from the store of the informer
// of its type, in whichever namespace's informer holds it.
func TestStoresGet(t *testing.T) {
	s := newStores()
	like := &appsv1.Deployment{}
	_, _, known, err := s.get(like, types.NamespacedName{Namespace: "shop", Name: "web"})
	require.NoError(t, err)
	assert.False(t, known, "no informer of the type yet")
	w := cachedDeployment(t, nil)
	shop := s.newInformer(&toolscache.ListWatch{}, like, 0, toolscache.Indexers{})
	other := s.newInformer(&toolscache.ListWatch{}, like, 0, toolscache.Indexers{})
	require.NoError(t, other.GetStore().Add(&cachedWorkload{cachedMeta: cachedMeta{name: "api", namespace: "other"}}))
	require.NoError(t, shop.GetStore().Add(w))
	tests := []struct {
		key    types.NamespacedName
		found  bool
		holder *cachedWorkload
	}{
		{key: types.NamespacedName{Namespace: "shop", Name: "web"}, found: true, holder: w},
		{key: types.NamespacedName{Namespace: "other", Name: "web"}},
		{key: types.NamespacedName{Namespace: "other", Name: "api"}, found: true},
	}
	for _, tt := range tests {
		obj, ok, known, err := s.get(like, tt.key)
		require.NoError(t, err)
		assert.True(t, known)
		assert.Equal(t, tt.found, ok, "%s", tt.key)
		if tt.holder != nil {
			assert.Same(t, tt.holder, obj, "the cache's own object, no copy")
		}
	}
	_, _, known, err = s.get(&corev1.ConfigMap{}, types.NamespacedName{Namespace: "shop", Name: "web"})
	require.NoError(t, err)
	assert.False(t, known, "another type's informers are not searched")
}

// TestCachedConfig: a ConfigMap or Secret in the controller's own cache
// keeps its identity, version and per-key digests (the content the full
// object gives, hash vectors included), nothing of the payload, and is
// cached again as itself.
func TestCachedConfig(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	meta := metav1.ObjectMeta{Name: "app", Namespace: "shop", ResourceVersion: "7", UID: "u", CreationTimestamp: metav1.Unix(1795000000, 0),
		Labels: map[string]string{"app": "shop"}, Annotations: map[string]string{lastApplied: big}}
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"big": big, "small": "1"}, BinaryData: map[string][]byte{"bin": []byte(big)}},
		&corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"password": []byte("s3cret"), "big": []byte(big)}},
		&corev1.ConfigMap{ObjectMeta: meta},
	}
	vs, err := vectors.Load()
	require.NoError(t, err)
	for _, v := range vs {
		for _, line := range strings.Split(v.APIServer, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			var obj client.Object = &corev1.ConfigMap{}
			if strings.Contains(line, `"kind":"Secret"`) {
				obj = &corev1.Secret{}
			}
			require.NoError(t, json.Unmarshal([]byte(line), obj), v.File)
			objs = append(objs, obj)
		}
	}
	for _, full := range objs {
		t.Run(fmt.Sprintf("%T %s", full, full.GetName()), func(t *testing.T) {
			want, err := ContentOf(full)
			require.NoError(t, err)
			out, err := cacheConfig(full.DeepCopyObject())
			require.NoError(t, err)
			c, ok := out.(*cachedConfig)
			require.True(t, ok, "%T", out)
			assert.Equal(t, full.GetName(), c.GetName())
			assert.Equal(t, full.GetNamespace(), c.GetNamespace())
			assert.Equal(t, full.GetUID(), c.GetUID())
			assert.Equal(t, full.GetResourceVersion(), c.GetResourceVersion())
			assert.Equal(t, full.GetCreationTimestamp().Unix(), c.GetCreationTimestamp().Unix())
			assert.Nil(t, c.GetAnnotations())
			assert.Nil(t, c.GetLabels())
			got, err := ContentOf(c)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Less(t, len(c.digests), 64*len(want.Keys)+1, "digests only, no payload")
			again, err := cacheConfig(c)
			require.NoError(t, err)
			assert.Same(t, c, again, "idempotent")
			if len(c.digests) > 0 {
				damaged := c.DeepCopyObject().(*cachedConfig)
				damaged.digests = damaged.digests[:len(damaged.digests)-1]
				_, err = ContentOf(damaged)
				assert.ErrorContains(t, err, "not a digest")
			}
		})
	}
}

// TestCompactUID: a UID reads back exactly as it was given, whether kept
// as 16 bytes (the API server's form) or as it is.
func TestCompactUID(t *testing.T) {
	tests := []struct {
		uid     types.UID
		compact bool
	}{
		{uid: "8d6f0c2e-51b3-4a7e-9f3c-0123456789ab", compact: true},
		{uid: "ffffffff-ffff-ffff-ffff-ffffffffffff", compact: true},
		{uid: "8D6F0C2E-51B3-4A7E-9F3C-0123456789AB"},
		{uid: "00000000-0000-0000-0000-000000000000"},
		{uid: "8d6f0c2e-51b3-4a7e-9f3c-0123456789a"},
		{uid: "8d6f0c2e_51b3-4a7e-9f3c-0123456789ab"},
		{uid: "8d6f0c2e-51b3-4a7e-9f3c-0123456789ag"},
		{uid: "8d6f-uid"},
		{uid: ""},
	}
	for _, tt := range tests {
		c := newCompactUID(tt.uid)
		assert.Equal(t, tt.uid, c.uid(), "%q", tt.uid)
		assert.Equal(t, tt.compact, c.other == "" && tt.uid != "", "%q kept as 16 bytes", tt.uid)
	}
}
