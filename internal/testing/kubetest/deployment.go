package kubetest

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Deployment is the typed Deployment of a test, for a clientset's Create:
// pod labels app: <name> and the selector that matches them, replicas (0
// keeps the Deployment controller from making pods, which never run on the
// test clusters anyway: there is no kubelet), and one container, app, whose
// image does not exist, reading config through env and envFrom. Workload
// writes such a manifest as YAML.
func Deployment(name string, replicas int32, env []corev1.EnvVar, envFrom []corev1.EnvFromSource) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.invalid/app:1", Env: env, EnvFrom: envFrom,
				}}},
			},
		},
	}
}

// KeyRef is the env entry that sets variable key from the key of the same
// name in ConfigMap configMap (EnvKey writes it as YAML).
func KeyRef(configMap, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Key: key}}}
}

// FromConfigMap is the envFrom entry that reads every key of ConfigMap
// configMap.
func FromConfigMap(configMap string) corev1.EnvFromSource {
	return corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}
}
