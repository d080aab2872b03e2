package controller

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Observer computes what the controller's reconcile compares for one
// workload, from typed objects as the API server returns them, without a
// cluster: the workload and the configs go through the cache transforms
// (TransformWorkload, TransformConfigMap, TransformSecret), the pod
// template is read from the cached form, and View and Input come from the
// reconciler's own view and observe. An Argo Rollout is read as the
// controller reads it when its CRD is served (unstructured). A ReplicaSet
// or Job, which the controller caches but does not manage, is read from
// its reduced template the same way. Not safe for concurrent use.
type Observer struct {
	r *Reconciler
}

// NewObserver returns an Observer with the controller's options opts.
func NewObserver(opts Options) (*Observer, error) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	kinds := append(builtinKinds(), unstructuredKind(RolloutGVK, "spec", "template"))
	return &Observer{r: newReconciler(nil, nil, nil, kinds, m, opts, logr.Discard())}, nil
}

// Observe reads workload and the live configs of the cluster as the
// controller does. in is the zero Input when v is not managed.
func (o *Observer) Observe(ctx context.Context, workload client.Object, configs []client.Object) (in Input, v View, err error) {
	cached, err := TransformWorkload(workload.DeepCopyObject())
	if err != nil {
		return in, v, err
	}
	obj, ok := cached.(client.Object)
	if !ok {
		return in, v, fmt.Errorf("the cache transform made a %T", cached)
	}
	var tmpl *corev1.PodTemplateSpec
	kind := workload.GetObjectKind().GroupVersionKind().Kind
	switch w := obj.(type) {
	case *appsv1.ReplicaSet:
		tmpl, kind = &w.Spec.Template, "ReplicaSet"
	case *batchv1.Job:
		tmpl, kind = &w.Spec.Template, "Job"
	default:
		k, known := o.r.kinds[kind]
		if !known {
			return in, v, fmt.Errorf("kind %q is not one the controller manages", kind)
		}
		if tmpl, err = k.template(obj); err != nil {
			return in, v, err
		}
	}
	store := mapReader{}
	for _, c := range configs {
		var t any
		switch c.(type) {
		case *corev1.ConfigMap:
			t, err = TransformConfigMap(c.DeepCopyObject())
		case *corev1.Secret:
			t, err = TransformSecret(c.DeepCopyObject())
		default:
			err = fmt.Errorf("%T is not a ConfigMap or Secret", c)
		}
		if err != nil {
			return in, v, err
		}
		tc, _ := t.(client.Object)
		store[storeKey(tc, c.GetNamespace(), c.GetName())] = tc
	}
	o.r.reader = store
	o.r.memory = newMemory()
	req := Request{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	v = o.r.view(req, obj, tmpl)
	if !v.Managed {
		return in, v, nil
	}
	in, _, err = o.r.observe(ctx, req, v, obj.GetCreationTimestamp().Time)
	return in, v, err
}

// mapReader is a client.Reader over transformed ConfigMaps and Secrets.
type mapReader map[string]client.Object

func storeKey(obj client.Object, ns, name string) string {
	return fmt.Sprintf("%T %s/%s", obj, ns, name)
}

// Get implements client.Reader.
func (m mapReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	found, ok := m[storeKey(obj, key.Namespace, key.Name)]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: fmt.Sprintf("%T", obj)}, key.Name)
	}
	switch dst := obj.(type) {
	case *corev1.ConfigMap:
		src, _ := found.(*corev1.ConfigMap)
		src.DeepCopyInto(dst)
	case *corev1.Secret:
		src, _ := found.(*corev1.Secret)
		src.DeepCopyInto(dst)
	default:
		return fmt.Errorf("reading a %T is not supported", obj)
	}
	return nil
}

// List implements client.Reader; observe never lists.
func (mapReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("listing is not supported")
}
