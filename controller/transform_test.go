package controller_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
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
	assert.Nil(t, out.BinaryData, "the digests are one packed string, no map")
	assert.Nil(t, out.Annotations)
	assert.Less(t, len(out.SelfLink), 200, "three keys: their names and 32-byte digests") //nolint:staticcheck // the cached form's digests
	assert.NotContains(t, out.SelfLink, "xxxx")                                           //nolint:staticcheck // the cached form's digests

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
	assert.Nil(t, so.Data)
	assert.NotContains(t, so.SelfLink, "hunter2") //nolint:staticcheck // the cached form's digests
	raw, err := json.Marshal(so)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "aHVudGVyMg", "no base64 of the value either")
}

func TestContentOfRejectsNonDigest(t *testing.T) {
	out, err := controller.TransformConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n"},
		Data: map[string]string{"k": "v", "other": "w"}})
	require.NoError(t, err)
	packed := out.(*corev1.ConfigMap).SelfLink //nolint:staticcheck // the cached form's digests
	marker := "confighash.dev/digests/sha256:"
	require.True(t, strings.HasPrefix(packed, marker))
	for _, cut := range []int{1, 10, len(packed) - len(marker) - 1} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", SelfLink: packed[:len(packed)-cut]}} //nolint:staticcheck // a damaged cached form
		_, err := controller.ContentOf(cm)
		assert.ErrorContains(t, err, "not a digest", "cut %d", cut)
	}
}

// templateOf is the pod template of a typed or unstructured workload.
func templateOf(t testing.TB, obj client.Object) *corev1.PodTemplateSpec {
	t.Helper()
	if o, ok := obj.(*unstructured.Unstructured); ok {
		m, found, err := unstructured.NestedMap(o.Object, "spec", "template")
		require.NoError(t, err)
		require.True(t, found)
		var tmpl corev1.PodTemplateSpec
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(m, &tmpl))
		return &tmpl
	}
	tmpl, err := controller.PodTemplate(obj)
	require.NoError(t, err)
	return tmpl
}

// managedFieldsPadding is a managedFields entry's field set of a few KB.
var managedFieldsPadding = func() []byte {
	var b strings.Builder
	b.WriteString(`{"f:spec":{`)
	for i := range 200 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"f:field%d":{}`, i)
	}
	b.WriteString("}}")
	return []byte(b.String())
}()

// fullWorkloads wraps spec, with server-side metadata, status and
// managedFields, in every kind the controller manages.
func fullWorkloads(t testing.TB, spec corev1.PodSpec, meta, tmplAnn map[string]string) []client.Object {
	t.Helper()
	var out []client.Object
	for _, kind := range []string{"Deployment", "StatefulSet", "DaemonSet"} {
		out = append(out, realisticWorkload(kind, "app", 3, spec, meta, tmplAnn))
	}
	d := out[0].(*appsv1.Deployment)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 3, Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."}}}
	cj := &batchv1.CronJob{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"}, ObjectMeta: *d.ObjectMeta.DeepCopy()}
	cj.Spec.Schedule = "*/5 * * * *"
	cj.Spec.JobTemplate.Spec.Template = *d.Spec.Template.DeepCopy()
	out = append(out, cj)
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	require.NoError(t, err)
	rollout := &unstructured.Unstructured{Object: raw}
	rollout.SetGroupVersionKind(controller.RolloutGVK)
	require.NoError(t, unstructured.SetNestedField(rollout.Object, map[string]any{"canary": map[string]any{"steps": []any{map[string]any{"setWeight": int64(20)}}}}, "spec", "strategy"))
	out = append(out, rollout)
	for _, o := range out {
		o.SetNamespace("shop")
		o.SetUID("8d6f-uid")
		o.SetResourceVersion("4711")
		o.SetGeneration(4)
		a := o.GetAnnotations()
		a["kubectl.kubernetes.io/last-applied-configuration"] = strings.Repeat("{}", 2000)
		o.SetAnnotations(a)
		o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "helm", Operation: metav1.ManagedFieldsOperationApply,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(managedFieldsPadding))}})
	}
	return out
}

// TestTransformWorkloadKeepsWhatDecisionsRead: every kind, with the pod
// spec of every hash vector and a realistic chart's, reads the same once
// cached: identity, versions, annotations, what Inspect sees under each
// opt-in (references, keys, optional flags, external list, recorded
// hashes) and the index values; the transform is idempotent.
func TestTransformWorkloadKeepsWhatDecisionsRead(t *testing.T) {
	vs, err := vectors.Load()
	require.NoError(t, err)
	specs := map[string]corev1.PodSpec{"realistic": realisticPodSpec(3, realisticRefs{
		Env: "app-3", Files: "files-3", Creds: "creds-3", Registry: "registry", Cluster: "cluster"})}
	for _, v := range vs {
		specs[v.File] = v.PodSpec
	}
	ephemeral := realisticPodSpec(4, realisticRefs{Env: "e", Files: "f", Creds: "c", Registry: "r", Cluster: "k"})
	ephemeral.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "debug-creds"}, Key: "token", Optional: ptr.To(true)}}}},
		EnvFrom: []corev1.EnvFromSource{{Prefix: "DBG_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "dbg"}}}},
	}}}
	specs["ephemeral"] = ephemeral
	optIns := map[string]struct{ meta, tmpl map[string]string }{
		"render-time hash": {tmpl: map[string]string{"confighash.dev/hash": "v1-sha256:" + strings.Repeat("ab", 32),
			"confighash.dev/controller-hash": "v1-sha256:" + strings.Repeat("cd", 32), "checksum/config": "x"}},
		"external and baseline": {meta: map[string]string{"confighash.dev/external": "Secret/creds-3,ConfigMap/files-3",
			"confighash.dev/external-baseline": "{}"}, tmpl: map[string]string{"confighash.dev/hash": "v1-sha256:" + strings.Repeat("ab", 32)}},
		"enabled":          {meta: map[string]string{"confighash.dev/enabled": "true"}},
		"reloader named":   {meta: map[string]string{controller.ReloaderCMReloadAnnotation: "app-3,shop/cluster", controller.ReloaderSecAutoAnnotation: "true"}},
		"opted out":        {meta: map[string]string{"confighash.dev/enabled": "false"}, tmpl: map[string]string{"confighash.dev/hash": "v1-sha256:" + strings.Repeat("ab", 32)}},
		"not opted in":     {},
		"wave":             {meta: map[string]string{controller.WaveAnnotation: "true"}},
		"reloader configs": {meta: map[string]string{controller.ReloaderCMAutoAnnotation: "true"}},
	}
	for specName, spec := range specs {
		for optName, opt := range optIns {
			for _, full := range fullWorkloads(t, spec, opt.meta, opt.tmpl) {
				kind := full.GetObjectKind().GroupVersionKind().Kind
				t.Run(specName+"/"+optName+"/"+kind, func(t *testing.T) {
					out, err := controller.TransformWorkload(full.DeepCopyObject())
					require.NoError(t, err)
					lean := out.(client.Object)
					assert.Equal(t, full.GetName(), lean.GetName())
					assert.Equal(t, full.GetNamespace(), lean.GetNamespace())
					assert.Equal(t, full.GetUID(), lean.GetUID())
					assert.Equal(t, full.GetResourceVersion(), lean.GetResourceVersion())
					assert.Equal(t, full.GetGeneration(), lean.GetGeneration())
					wantAnn := maps.Clone(full.GetAnnotations())
					delete(wantAnn, "kubectl.kubernetes.io/last-applied-configuration")
					assert.Equal(t, wantAnn, lean.GetAnnotations())
					assert.Empty(t, lean.GetManagedFields())

					if _, ok := full.(*unstructured.Unstructured); !ok {
						assert.NotEqual(t, reflect.TypeOf(full), reflect.TypeOf(lean), "a typed workload is cached as the controller's own type")
					}
					ft, lt := templateOf(t, full), templateOf(t, lean)
					assert.Equal(t, ft.Annotations, lt.Annotations)
					assert.Equal(t, hashing.Discover(&ft.Spec), hashing.Discover(&lt.Spec))
					for _, keyID := range []string{"", "k1"} {
						assert.Equal(t, controller.Inspect("shop", full.GetAnnotations(), ft, "", keyID),
							controller.Inspect("shop", lean.GetAnnotations(), lt, "", keyID), "key id %q", keyID)
					}

					again, err := controller.TransformWorkload(lean.DeepCopyObject())
					require.NoError(t, err)
					assert.Equal(t, lean, again, "idempotent")
				})
			}
		}
	}
}

// TestTransformWorkloadIsLean: the cached form of a realistic workload
// holds no image, probe, resource, affinity, toleration, label, status or
// managedFields, and its size does not grow with the parts of the pod spec
// the controller does not read.
func TestTransformWorkloadIsLean(t *testing.T) {
	refs := realisticRefs{Env: "app-3", Files: "files-3", Creds: "creds-3", Registry: "registry", Cluster: "cluster"}
	ann := map[string]string{"confighash.dev/hash": "v1-sha256:" + strings.Repeat("ab", 32)}
	spec := realisticPodSpec(3, refs)
	bigger := realisticPodSpec(3, refs)
	for i := range bigger.Containers {
		c := &bigger.Containers[i]
		for k := range 100 {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprint("PAD_", k), Value: strings.Repeat("v", 100)})
		}
		c.Args = append(c.Args, strings.Repeat("--flag ", 200))
	}
	bigger.Tolerations = append(bigger.Tolerations, bigger.Tolerations...)
	bigger.Volumes = append(bigger.Volumes, corev1.Volume{Name: "more", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	small, big := fullWorkloads(t, spec, nil, ann), fullWorkloads(t, bigger, nil, ann)
	for i := range small {
		kind := small[i].GetObjectKind().GroupVersionKind().Kind
		t.Run(kind, func(t *testing.T) {
			fullRaw, err := json.Marshal(small[i])
			require.NoError(t, err)
			lean, err := controller.TransformWorkload(small[i].DeepCopyObject())
			require.NoError(t, err)
			leanRaw, err := json.Marshal(lean)
			require.NoError(t, err)
			leanBig, err := controller.TransformWorkload(big[i].DeepCopyObject())
			require.NoError(t, err)
			leanBigRaw, err := json.Marshal(leanBig)
			require.NoError(t, err)
			t.Logf("%s: %d bytes as JSON, %d cached", kind, len(fullRaw), len(leanRaw))
			assert.Len(t, leanBigRaw, len(leanRaw), "the cached form does not grow with unread fields")
			assert.Less(t, len(leanRaw), len(fullRaw)/5)
			for _, gone := range []string{"registry.invalid", "livenessProbe", "requests", "affinity", "tolerations",
				"app.kubernetes.io", "observedGeneration", "MinimumReplicasAvailable", "managedFields", "last-applied", "SETTING", "emptyDir", "serviceAccountToken", "downwardAPI"} {
				assert.NotContains(t, string(leanRaw), gone)
			}
		})
	}
}

// BenchmarkPodTemplate is the cost of reading a cached workload's pod
// template (rebuilding it from the cached uses), paid by every index, event
// handler and reconcile read.
func BenchmarkPodTemplate(b *testing.B) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	d.Spec.Template.Spec = realisticPodSpec(1, realisticRefs{Env: "e", Files: "f", Creds: "c", Registry: "r", Cluster: "k"})
	out, err := controller.TransformWorkload(d)
	require.NoError(b, err)
	lean := out.(client.Object)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := controller.PodTemplate(lean); err != nil {
			b.Fatal(err)
		}
	}
}
