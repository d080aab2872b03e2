package kubetest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/testing/kubetest"
)

// TestWorkload: the manifest reads, as the API server would decode it, as
// the workload described: names, annotations, replicas, the selector that
// matches its pods, and the container's config references in order.
func TestWorkload(t *testing.T) {
	replicas := int32(2)
	for _, tc := range []struct {
		name string
		w    kubetest.Workload
		want appsv1.Deployment
	}{
		{
			name: "the least",
			w:    kubetest.Workload{Name: "web"},
			want: deployment("web", "", nil, nil, nil, nil),
		},
		{
			name: "everything",
			w: kubetest.Workload{Name: "api", Namespace: "shop", Replicas: 2, Annotations: map[string]string{"b": "true", "a": "x: y"},
				Env: []string{kubetest.EnvKey("app", "LOG_LEVEL"), "{name: PLAIN, value: v}"}, EnvFrom: []string{"{secretRef: {name: creds}}"}},
			want: deployment("api", "shop", &replicas, map[string]string{"a": "x: y", "b": "true"},
				[]corev1.EnvVar{
					{Name: "LOG_LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "LOG_LEVEL"}}},
					{Name: "PLAIN", Value: "v"},
				},
				[]corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got appsv1.Deployment
			require.NoError(t, yaml.UnmarshalStrict([]byte(tc.w.YAML()), &got), tc.w.YAML())
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestWorkloadOtherKinds: the kind, API version and further spec fields
// are the ones given.
func TestWorkloadOtherKinds(t *testing.T) {
	w := kubetest.Workload{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web", Spec: []string{"strategy: {canary: {}}"}}
	var got map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(w.YAML()), &got))
	assert.Equal(t, "argoproj.io/v1alpha1", got["apiVersion"])
	assert.Equal(t, "Rollout", got["kind"])
	assert.Equal(t, map[string]any{"canary": map[string]any{}}, got["spec"].(map[string]any)["strategy"])
}

// TestWorkloadBatchKinds: a Job and a CronJob read, as the API server
// would decode them, as batch/v1 objects with no selector, a pod template
// that restarts Never (under spec.jobTemplate for a CronJob, which has a
// schedule) and the container's config references.
func TestWorkloadBatchKinds(t *testing.T) {
	envFrom := []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "job-config"}}}}
	annotations := map[string]string{"confighash.dev/enabled": "true"}
	t.Run("Job", func(t *testing.T) {
		w := kubetest.Workload{Kind: "Job", Name: "migrate", Namespace: "shop", Annotations: annotations, EnvFrom: []string{"{configMapRef: {name: job-config}}"}}
		var got batchv1.Job
		require.NoError(t, yaml.UnmarshalStrict([]byte(w.YAML()), &got), w.YAML())
		var want batchv1.Job
		want.APIVersion, want.Kind = "batch/v1", "Job"
		want.Name, want.Namespace, want.Annotations = "migrate", "shop", annotations
		want.Spec.Template = podTemplate("migrate", envFrom)
		assert.Equal(t, want, got)
	})
	t.Run("CronJob", func(t *testing.T) {
		w := kubetest.Workload{Kind: "CronJob", Name: "nightly", Spec: []string{"suspend: true"}, EnvFrom: []string{"{configMapRef: {name: job-config}}"}}
		var got batchv1.CronJob
		require.NoError(t, yaml.UnmarshalStrict([]byte(w.YAML()), &got), w.YAML())
		var want batchv1.CronJob
		want.APIVersion, want.Kind = "batch/v1", "CronJob"
		want.Name = "nightly"
		want.Spec.Schedule = "0 3 * * *"
		want.Spec.Suspend = ptr.To(true)
		want.Spec.JobTemplate.Spec.Template = podTemplate("nightly", envFrom)
		assert.Equal(t, want, got)
	})
}

func podTemplate(name string, envFrom []corev1.EnvFromSource) corev1.PodTemplateSpec {
	var p corev1.PodTemplateSpec
	p.Labels = map[string]string{"app": name}
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	p.Spec.Containers = []corev1.Container{{Name: name, Image: "registry.invalid/" + name + ":1", EnvFrom: envFrom}}
	return p
}

func deployment(name, namespace string, replicas *int32, annotations map[string]string, env []corev1.EnvVar, envFrom []corev1.EnvFromSource) appsv1.Deployment {
	var d appsv1.Deployment
	d.APIVersion, d.Kind = "apps/v1", "Deployment"
	d.Name, d.Namespace, d.Annotations = name, namespace, annotations
	d.Spec.Replicas = replicas
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	d.Spec.Template.Labels = map[string]string{"app": name}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: name, Image: "registry.invalid/" + name + ":1", Env: env, EnvFrom: envFrom}}
	return d
}
