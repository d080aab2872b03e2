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

// A config the cluster fills in without its key is pending, in each form
// the controller reads it (as the API server gives it, the Transform
// functions' form, its own cache's); with
// the key, or not filled in by the cluster, it is not. While it is pending
// the pods' use of it is missing that key, optional or not, so Decide holds
// the workload back and records no baseline; once the key is there, its
// content is the first baseline.
func TestFillPending(t *testing.T) {
	meta := func(name string, annotations, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: "5", Annotations: annotations, Labels: labels}
	}
	secret := func(typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: meta("robot-token", nil, nil), Type: typ, Data: data}
	}
	caBundle := map[string]string{hashing.InjectCABundleAnnotation: "true"}
	trusted := map[string]string{hashing.InjectTrustedCABundleLabel: "true"}
	configMap := func(annotations, labels map[string]string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: meta("ca", annotations, labels), Data: data}
	}
	filledData := map[string][]byte{corev1.ServiceAccountTokenKey: []byte("t1"), "ca.crt": []byte("ca"), "namespace": []byte("shop")}
	pending := secret(corev1.SecretTypeServiceAccountToken, nil)
	filled := secret(corev1.SecretTypeServiceAccountToken, filledData)
	caPending := configMap(caBundle, nil, map[string]string{})
	caFilled := configMap(caBundle, nil, map[string]string{"service-ca.crt": "pem"})
	for _, tc := range []struct {
		name string
		obj  client.Object
		want string
	}{
		{name: "token Secret as created", obj: pending, want: "token"},
		{name: "token Secret with other keys only", obj: secret(corev1.SecretTypeServiceAccountToken, map[string][]byte{"ca.crt": []byte("ca")}), want: "token"},
		{name: "token Secret filled in", obj: filled},
		{name: "token Secret with an empty token", obj: secret(corev1.SecretTypeServiceAccountToken, map[string][]byte{corev1.ServiceAccountTokenKey: {}})},
		{name: "Opaque Secret without token", obj: secret(corev1.SecretTypeOpaque, nil)},
		{name: "inject-cabundle ConfigMap as created", obj: caPending, want: "service-ca.crt"},
		{name: "inject-cabundle ConfigMap with other keys only", obj: configMap(caBundle, nil, map[string]string{"app.conf": "x"}), want: "service-ca.crt"},
		{name: "inject-cabundle ConfigMap filled in", obj: caFilled},
		{name: "inject-cabundle false", obj: configMap(map[string]string{hashing.InjectCABundleAnnotation: "false"}, nil, nil)},
		{name: "inject-trusted-cabundle ConfigMap as created", obj: configMap(nil, trusted, map[string]string{"old": "x"}), want: "ca-bundle.crt"},
		{name: "inject-trusted-cabundle ConfigMap filled in", obj: configMap(nil, trusted, map[string]string{"ca-bundle.crt": "pem"})},
		{name: "plain ConfigMap", obj: configMap(nil, nil, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, FillPending(tc.obj), "as the API server gives it")
			transform := TransformConfigMap
			if _, ok := tc.obj.(*corev1.Secret); ok {
				transform = TransformSecret
			}
			transformed, err := transform(tc.obj.DeepCopyObject())
			require.NoError(t, err)
			assert.Equal(t, tc.want, FillPending(transformed.(client.Object)), "the Transform functions' form")
			cached, err := cacheConfig(tc.obj.DeepCopyObject())
			require.NoError(t, err)
			assert.Equal(t, tc.want, FillPending(cached.(*cachedConfig)), "the controller's cache")
		})
	}

	obs, err := NewObserver(DefaultOptions())
	require.NoError(t, err)
	for _, tc := range []struct {
		name        string
		optional    bool
		required    bool // a key reference to the filled-in key besides the envFrom
		obj         client.Object
		wantAction  Action
		wantMissing []string
	}{
		{name: "pending", obj: pending, wantAction: ActionBlocked, wantMissing: []string{"Secret/robot-token key token"}},
		{name: "pending, optional", optional: true, obj: pending, wantAction: ActionBlocked, wantMissing: []string{"Secret/robot-token key token"}},
		{name: "pending, its token required by key", required: true, obj: pending, wantAction: ActionBlocked, wantMissing: []string{"Secret/robot-token key token"}},
		{name: "filled in: the first baseline", obj: filled, wantAction: ActionRecordBaseline},
		{name: "Opaque without token: the first baseline", obj: secret(corev1.SecretTypeOpaque, nil), wantAction: ActionRecordBaseline},
		{name: "CA bundle pending", obj: caPending, wantAction: ActionBlocked, wantMissing: []string{"ConfigMap/ca key service-ca.crt"}},
		{name: "CA bundle pending, optional", optional: true, obj: caPending, wantAction: ActionBlocked, wantMissing: []string{"ConfigMap/ca key service-ca.crt"}},
		{name: "CA bundle pending, required by key", required: true, obj: caPending, wantAction: ActionBlocked, wantMissing: []string{"ConfigMap/ca key service-ca.crt"}},
		{name: "CA bundle filled in: the first baseline", required: true, obj: caFilled, wantAction: ActionRecordBaseline},
		{name: "trusted CA bundle pending", obj: configMap(nil, trusted, map[string]string{"old": "x"}), wantAction: ActionBlocked, wantMissing: []string{"ConfigMap/ca key ca-bundle.crt"}},
		{name: "ConfigMap without the annotation: the first baseline", obj: configMap(nil, nil, map[string]string{}), wantAction: ActionRecordBaseline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := filledReader(tc.obj, tc.optional, tc.required)
			in, _, err := obs.Observe(context.Background(), d, []client.Object{tc.obj})
			require.NoError(t, err)
			got := Decide(in)
			assert.Equal(t, tc.wantAction, got.Action)
			assert.Equal(t, tc.wantMissing, got.Missing)
		})
	}
}

// filledReader is an opted-in Deployment in namespace shop whose container
// reads every key of config obj (envFrom, optional or not) and, when
// required, by key the key the cluster fills in (token, service-ca.crt).
func filledReader(obj client.Object, optional, required bool) *appsv1.Deployment {
	ref := corev1.LocalObjectReference{Name: obj.GetName()}
	c := corev1.Container{Name: "app"}
	if _, secret := obj.(*corev1.Secret); secret {
		c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref, Optional: ptr.To(optional)}}}
		if required {
			c.Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref, Key: corev1.ServiceAccountTokenKey}}}}
		}
	} else {
		c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref, Optional: ptr.To(optional)}}}
		if required {
			c.Env = []corev1.EnvVar{{Name: "CA", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref, Key: "service-ca.crt"}}}}
		}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{"confighash.dev/enabled": "true"}},
		Spec:       appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}},
	}
}
