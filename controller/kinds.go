package controller

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RolloutGVK is Argo Rollouts' Rollout, managed when its CRD is served.
var RolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}

// workloadKind adapts one kind of workload to the generic reconciler: how to
// make an object and a list, and where the pod template lives.
type workloadKind struct {
	// Name is the kind, as used in requests, metrics and index values.
	Name string
	// TemplatePath is the field path of the pod template.
	TemplatePath []string
	newObject    func() client.Object
	newList      func() client.ObjectList
	template     func(client.Object) (*corev1.PodTemplateSpec, error)
}

// builtinKinds are the workloads every cluster serves.
func builtinKinds() []*workloadKind {
	return []*workloadKind{
		{
			Name: "Deployment", TemplatePath: []string{"spec", "template"},
			newObject: func() client.Object { return &appsv1.Deployment{} },
			newList:   func() client.ObjectList { return &appsv1.DeploymentList{} },
			template:  typedTemplate(func(o *appsv1.Deployment) *corev1.PodTemplateSpec { return &o.Spec.Template }),
		},
		{
			Name: "StatefulSet", TemplatePath: []string{"spec", "template"},
			newObject: func() client.Object { return &appsv1.StatefulSet{} },
			newList:   func() client.ObjectList { return &appsv1.StatefulSetList{} },
			template:  typedTemplate(func(o *appsv1.StatefulSet) *corev1.PodTemplateSpec { return &o.Spec.Template }),
		},
		{
			Name: "DaemonSet", TemplatePath: []string{"spec", "template"},
			newObject: func() client.Object { return &appsv1.DaemonSet{} },
			newList:   func() client.ObjectList { return &appsv1.DaemonSetList{} },
			template:  typedTemplate(func(o *appsv1.DaemonSet) *corev1.PodTemplateSpec { return &o.Spec.Template }),
		},
		{
			Name: "CronJob", TemplatePath: []string{"spec", "jobTemplate", "spec", "template"},
			newObject: func() client.Object { return &batchv1.CronJob{} },
			newList:   func() client.ObjectList { return &batchv1.CronJobList{} },
			template: typedTemplate(func(o *batchv1.CronJob) *corev1.PodTemplateSpec {
				return &o.Spec.JobTemplate.Spec.Template
			}),
		},
	}
}

// unstructuredKind manages a custom resource with a pod template at path,
// like Argo Rollouts' spec.template.
func unstructuredKind(gvk schema.GroupVersionKind, path ...string) *workloadKind {
	return &workloadKind{
		Name:         gvk.Kind,
		TemplatePath: path,
		newObject: func() client.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			return u
		},
		newList: func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			return l
		},
		template: func(obj client.Object) (*corev1.PodTemplateSpec, error) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return nil, fmt.Errorf("%T is not unstructured", obj)
			}
			m, found, err := unstructured.NestedMap(u.Object, path...)
			if err != nil || !found {
				return nil, err
			}
			var t corev1.PodTemplateSpec
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t); err != nil {
				return nil, fmt.Errorf("%s %s: %s: %w", gvk.Kind, client.ObjectKeyFromObject(u), strings.Join(path, "."), err)
			}
			return &t, nil
		},
	}
}

// typedTemplate reads the pod template of a typed kind, from its cached
// form (see TransformWorkload) or in place (get).
func typedTemplate[T client.Object](get func(T) *corev1.PodTemplateSpec) func(client.Object) (*corev1.PodTemplateSpec, error) {
	return func(obj client.Object) (*corev1.PodTemplateSpec, error) {
		if w, ok := obj.(*cachedWorkload); ok {
			return w.podTemplate()
		}
		o, ok := obj.(T)
		if !ok {
			return nil, fmt.Errorf("%T is not the expected kind", obj)
		}
		return get(o), nil
	}
}
