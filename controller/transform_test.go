package controller_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/testing/vectors"
)

// apiServerObjects decodes a vector's API-server form into typed objects.
func apiServerObjects(t testing.TB, v vectors.Vector) []client.Object {
	t.Helper()
	var out []client.Object
	for _, line := range strings.Split(v.APIServer, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var tm metav1.TypeMeta
		require.NoError(t, json.Unmarshal([]byte(line), &tm))
		var obj client.Object = &corev1.ConfigMap{}
		if tm.Kind == "Secret" {
			obj = &corev1.Secret{}
		}
		require.NoError(t, json.Unmarshal([]byte(line), obj), v.File)
		if obj.GetNamespace() == "" {
			obj.SetNamespace(v.Namespace)
		}
		out = append(out, obj)
	}
	return out
}

// cachedForm runs an object through the controller's cache transform.
func cachedForm(t testing.TB, obj client.Object) client.Object {
	t.Helper()
	var out any
	var err error
	switch o := obj.DeepCopyObject().(type) {
	case *corev1.ConfigMap:
		out, err = controller.TransformConfigMap(o)
	case *corev1.Secret:
		out, err = controller.TransformSecret(o)
	}
	require.NoError(t, err)
	return out.(client.Object)
}

// TestVectorsThroughTheCache is hash parity: the API-server form of every
// vector, cached the way the controller caches it, gives the vector's value.
func TestVectorsThroughTheCache(t *testing.T) {
	vs, err := vectors.Load()
	require.NoError(t, err)
	for _, v := range vs {
		t.Run(v.File, func(t *testing.T) {
			var contents []hashing.Content
			for _, obj := range apiServerObjects(t, v) {
				c, err := controller.ContentOf(cachedForm(t, obj))
				require.NoError(t, err)
				contents = append(contents, c)
			}
			assert.Equal(t, v.Expected, v.Compute(contents))
		})
	}
}

func TestTransformDropsPayloadAndMetadata(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: "app", Namespace: "shop", ResourceVersion: "7", UID: "u",
			Labels:        map[string]string{"app": "shop"},
			Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": big},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Data:       map[string]string{"big": big, "small": "1"},
		BinaryData: map[string][]byte{"bin": []byte(big)},
	}
	out := cachedForm(t, cm).(*corev1.ConfigMap)
	assert.Nil(t, out.Data)
	assert.Nil(t, out.ManagedFields)
	assert.Nil(t, out.Labels)
	assert.Equal(t, "7", out.ResourceVersion)
	assert.Len(t, out.BinaryData, 3)
	for k, v := range out.BinaryData {
		assert.Len(t, v, 32, k)
	}
	assert.Nil(t, out.Annotations)

	// Idempotent: transforming the cached form again changes nothing.
	again, err := controller.TransformConfigMap(out.DeepCopy())
	require.NoError(t, err)
	assert.Equal(t, out, again)

	// Same content whether read from the full object or the cached form.
	full, err := controller.ContentOf(cm)
	require.NoError(t, err)
	cached, err := controller.ContentOf(out)
	require.NoError(t, err)
	assert.Equal(t, full, cached)

	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"password": []byte("hunter2")}}
	so := cachedForm(t, s).(*corev1.Secret)
	assert.Equal(t, corev1.SecretTypeOpaque, so.Type)
	assert.False(t, bytes.Contains(so.Data["password"], []byte("hunter2")))
	raw, err := json.Marshal(so)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "aHVudGVyMg", "no base64 of the value either")
}

func TestContentOfRejectsNonDigest(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", SelfLink: "confighash.dev/digests/sha256"}, //nolint:staticcheck // the marker the transform sets
		BinaryData: map[string][]byte{"k": []byte("short")},
	}
	_, err := controller.ContentOf(cm)
	assert.ErrorContains(t, err, "not a digest")
}
