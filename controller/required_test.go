package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/confighash/confighash/hashing"
)

// The keys a pod cannot start without: those named without optional: true
// by env valueFrom (every container list) and by the items of volumes and
// projected sources; envFrom and volumes without items name none.
func TestRequiredKeys(t *testing.T) {
	cmKey := func(name, key string, optional *bool) corev1.EnvVar {
		return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}}
	}
	secretKey := func(name, key string, optional *bool) corev1.EnvVar {
		return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}}
	}
	items := func(keys ...string) []corev1.KeyToPath {
		var out []corev1.KeyToPath
		for _, k := range keys {
			out = append(out, corev1.KeyToPath{Key: k, Path: k})
		}
		return out
	}
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Env: []corev1.EnvVar{secretKey("db", "user", nil)}}},
		Containers: []corev1.Container{{
			Env: []corev1.EnvVar{
				cmKey("app", "B", ptr.To(false)), cmKey("app", "A", nil), cmKey("app", "A", nil),
				cmKey("app", "OPT", ptr.To(true)), secretKey("opt", "x", ptr.To(true)),
				{Name: "PLAIN", Value: "v"},
			},
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "whole"}}},
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "debug"}, Optional: ptr.To(true)}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "psec"}}},
			},
		}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Env: []corev1.EnvVar{cmKey("debug", "D", nil)}}}},
		Volumes: []corev1.Volume{
			{Name: "site", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "site"}, Items: items("site.conf")}}},
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
			{Name: "opt", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "opt-vol", Items: items("k"), Optional: ptr.To(true)}}},
			{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj"}, Items: items("p1")}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "psec"}, Items: items("s1")}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "popt"}, Items: items("s2"), Optional: ptr.To(true)}},
			}}}},
		},
	}
	assert.Equal(t, map[string][]string{
		"ConfigMap/app":   {"A", "B"},
		"ConfigMap/debug": {"D"},
		"ConfigMap/proj":  {"p1"},
		"ConfigMap/site":  {"site.conf"},
		"Secret/db":       {"user"},
		"Secret/psec":     {"s1"},
	}, requiredKeys(spec))
	assert.Empty(t, requiredKeys(&corev1.PodSpec{}))

	// The cache keeps them: its pod template has the same uses and the
	// same required keys.
	w, err := newCachedWorkload("Deployment", &metav1.ObjectMeta{Name: "web", Namespace: "shop"}, &corev1.PodTemplateSpec{Spec: *spec})
	require.NoError(t, err)
	cached, err := w.podTemplate()
	require.NoError(t, err)
	assert.Equal(t, hashing.Discover(spec), hashing.Discover(&cached.Spec))
	assert.Equal(t, requiredKeys(spec), requiredKeys(&cached.Spec))
}

// requiredKeys is the required keys hashing.DiscoverRequired finds.
func requiredKeys(spec *corev1.PodSpec) map[string][]string {
	_, required := hashing.DiscoverRequired(spec)
	return required
}

func TestMissingMessageNamesKeys(t *testing.T) {
	assert.Equal(t, "required ConfigMap shop/app key A, Secret shop/db missing; not rolling until it exists",
		missingMessage([]string{missingKeyRef("ConfigMap/app", "A"), "Secret/db"}, "shop"))
}
