package hashing_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/confighash/confighash/hashing"
)

// TestClusterFilled: the configs the cluster fills in, and the key that
// marks each filled in; a marker with another value, on the other kind, or
// as the other of annotation and label, makes none.
func TestClusterFilled(t *testing.T) {
	caBundle := map[string]string{hashing.InjectCABundleAnnotation: "true"}
	trusted := map[string]string{hashing.InjectTrustedCABundleLabel: "true"}
	tests := []struct {
		name                string
		kind                hashing.Kind
		secretType          string
		annotations, labels map[string]string
		wantKey             string
	}{
		{name: "token Secret", kind: hashing.KindSecret, secretType: "kubernetes.io/service-account-token", wantKey: "token"},
		{name: "Opaque Secret", kind: hashing.KindSecret, secretType: "Opaque"},
		{name: "Secret without a type", kind: hashing.KindSecret},
		{name: "inject-cabundle ConfigMap", kind: hashing.KindConfigMap, annotations: caBundle, wantKey: "service-ca.crt"},
		{name: "inject-cabundle false", kind: hashing.KindConfigMap, annotations: map[string]string{hashing.InjectCABundleAnnotation: "false"}},
		{name: "inject-cabundle as a label", kind: hashing.KindConfigMap, labels: caBundle},
		{name: "inject-cabundle Secret", kind: hashing.KindSecret, secretType: "Opaque", annotations: caBundle},
		{name: "inject-trusted-cabundle ConfigMap", kind: hashing.KindConfigMap, labels: trusted, wantKey: "ca-bundle.crt"},
		{name: "inject-trusted-cabundle false", kind: hashing.KindConfigMap, labels: map[string]string{hashing.InjectTrustedCABundleLabel: "false"}},
		{name: "inject-trusted-cabundle as an annotation", kind: hashing.KindConfigMap, annotations: trusted},
		{name: "inject-trusted-cabundle Secret", kind: hashing.KindSecret, labels: trusted},
		{name: "ConfigMap with a service-account-token type", kind: hashing.KindConfigMap, secretType: "kubernetes.io/service-account-token"},
		{name: "plain ConfigMap", kind: hashing.KindConfigMap, annotations: map[string]string{"a": "true"}, labels: map[string]string{"b": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, filled := hashing.ClusterFilled(tt.kind, tt.secretType, tt.annotations, tt.labels)
			assert.Equal(t, tt.wantKey, key)
			assert.Equal(t, tt.wantKey != "", filled)
		})
	}
	assert.True(t, hashing.ClusterFilledMarker(false, hashing.InjectCABundleAnnotation))
	assert.True(t, hashing.ClusterFilledMarker(true, hashing.InjectTrustedCABundleLabel))
	assert.False(t, hashing.ClusterFilledMarker(true, hashing.InjectCABundleAnnotation))
	assert.False(t, hashing.ClusterFilledMarker(false, hashing.InjectTrustedCABundleLabel))
	assert.False(t, hashing.ClusterFilledMarker(false, "app"))
}
