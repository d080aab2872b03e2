package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// A ServiceAccount token Secret without its token is pending, in each form
// the controller reads it (as the API server gives it, TransformSecret's,
// its own cache's); with the token, or of another type, it is not. While
// it is pending the pods' use of it is missing its token, optional or not,
// so Decide holds the workload back and records no baseline; once the
// token is there, its content is the first baseline.
func TestTokenPending(t *testing.T) {
	secret := func(typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "robot-token", ResourceVersion: "5"}, Type: typ, Data: data}
	}
	filledData := map[string][]byte{corev1.ServiceAccountTokenKey: []byte("t1"), "ca.crt": []byte("ca"), "namespace": []byte("shop")}
	pending := secret(corev1.SecretTypeServiceAccountToken, nil)
	filled := secret(corev1.SecretTypeServiceAccountToken, filledData)
	for _, tc := range []struct {
		name string
		s    *corev1.Secret
		want bool
	}{
		{name: "token Secret as created", s: pending, want: true},
		{name: "token Secret with other keys only", s: secret(corev1.SecretTypeServiceAccountToken, map[string][]byte{"ca.crt": []byte("ca")}), want: true},
		{name: "token Secret filled in", s: filled},
		{name: "token Secret with an empty token", s: secret(corev1.SecretTypeServiceAccountToken, map[string][]byte{corev1.ServiceAccountTokenKey: {}})},
		{name: "Opaque Secret without token", s: secret(corev1.SecretTypeOpaque, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, TokenPending(tc.s), "as the API server gives it")
			transformed, err := TransformSecret(tc.s.DeepCopy())
			require.NoError(t, err)
			assert.Equal(t, tc.want, TokenPending(transformed.(*corev1.Secret)), "TransformSecret's form")
			cached, err := cacheConfig(tc.s.DeepCopy())
			require.NoError(t, err)
			assert.Equal(t, tc.want, TokenPending(cached.(*cachedConfig)), "the controller's cache")
		})
	}
	assert.False(t, TokenPending(&corev1.ConfigMap{}))

	obs, err := NewObserver(DefaultOptions())
	require.NoError(t, err)
	for _, tc := range []struct {
		name        string
		optional    bool
		required    bool // a secretKeyRef to token besides the envFrom
		s           *corev1.Secret
		wantAction  Action
		wantMissing []string
	}{
		{name: "pending", s: pending, wantAction: ActionBlocked, wantMissing: []string{"Secret/robot-token key token"}},
		{name: "pending, optional", optional: true, s: pending, wantAction: ActionBlocked, wantMissing: []string{"Secret/robot-token key token"}},
		{name: "pending, its token required by key", required: true, s: pending, wantAction: ActionBlocked, wantMissing: []string{"Secret/robot-token key token"}},
		{name: "filled in: the first baseline", s: filled, wantAction: ActionRecordBaseline},
		{name: "Opaque without token: the first baseline", s: secret(corev1.SecretTypeOpaque, nil), wantAction: ActionRecordBaseline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tokenReader(tc.optional, tc.required)
			in, _, err := obs.Observe(context.Background(), d, []client.Object{tc.s})
			require.NoError(t, err)
			got := Decide(in)
			assert.Equal(t, tc.wantAction, got.Action)
			assert.Equal(t, tc.wantMissing, got.Missing)
		})
	}
}

// tokenReader is an opted-in Deployment in namespace shop whose
// container reads every key of Secret robot-token (envFrom, optional or
// not) and, when required, its token by key.
func tokenReader(optional, required bool) *appsv1.Deployment {
	ref := corev1.LocalObjectReference{Name: "robot-token"}
	c := corev1.Container{Name: "app", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref, Optional: ptr.To(optional)}}}}
	if required {
		c.Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref, Key: corev1.ServiceAccountTokenKey}}}}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{"confighash.dev/enabled": "true"}},
		Spec:       appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}},
	}
}
