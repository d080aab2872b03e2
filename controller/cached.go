package controller

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cachedWorkload is the cached form of a Deployment, StatefulSet, DaemonSet
// or CronJob (TransformWorkload): what the controller's decisions read and
// nothing else. Its identity, versions and annotations (without kubectl's
// last-applied copy, as key/value pairs with the keys and the namespace
// interned), and the pod template reduced by ReducePodTemplate, packed as
// protobuf (PodTemplate unpacks it). It implements client.Object so the
// informer, its key function and controller-runtime's event handlers take
// it; the controller reads it from the informer's store (see stores), not
// through controller-runtime's typed reader, and never writes it.
type cachedWorkload struct {
	kind            string
	name, namespace string
	uid             types.UID
	resourceVersion string
	generation      int64
	// annotations holds key, value, key, value, ... in key order.
	annotations []string
	// template is the reduced pod template, as protobuf.
	template string
}

var _ client.Object = &cachedWorkload{}

// newCachedWorkload is the cached form of a workload of kind with metadata
// m and pod template t.
func newCachedWorkload(kind string, m *metav1.ObjectMeta, t *corev1.PodTemplateSpec) (*cachedWorkload, error) {
	reduced := ReducePodTemplate(t)
	raw, err := reduced.Marshal()
	if err != nil {
		return nil, fmt.Errorf("%s %s: packing the pod template: %w", kind, types.NamespacedName{Namespace: m.Namespace, Name: m.Name}, err)
	}
	w := &cachedWorkload{
		kind: kind, name: m.Name, namespace: intern(m.Namespace), uid: m.UID,
		resourceVersion: m.ResourceVersion, generation: m.Generation, template: string(raw),
	}
	w.SetAnnotations(m.Annotations)
	return w, nil
}

// intern returns the one copy of s this process keeps: namespaces and
// annotation keys repeat across every cached object.
func intern(s string) string { return unique.Make(s).Value() }

// podTemplate unpacks the reduced pod template (a new value each call).
func (w *cachedWorkload) podTemplate() (*corev1.PodTemplateSpec, error) {
	var t corev1.PodTemplateSpec
	if err := t.Unmarshal([]byte(w.template)); err != nil {
		return nil, fmt.Errorf("%s %s/%s: cached pod template: %w", w.kind, w.namespace, w.name, err)
	}
	return &t, nil
}

// MarshalJSON writes the cached form as JSON, its pod template unpacked
// (for logs and tests; nothing is sent to the API server from it).
func (w *cachedWorkload) MarshalJSON() ([]byte, error) {
	t, err := w.podTemplate()
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Kind     string                  `json:"kind"`
		Metadata metav1.ObjectMeta       `json:"metadata"`
		Template *corev1.PodTemplateSpec `json:"template"`
	}{w.kind, metav1.ObjectMeta{Name: w.name, Namespace: w.namespace, UID: w.uid, ResourceVersion: w.resourceVersion,
		Generation: w.generation, Annotations: w.GetAnnotations()}, t})
}

// GetObjectKind implements runtime.Object; the cached form carries no
// apiVersion or kind.
func (w *cachedWorkload) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (w *cachedWorkload) DeepCopyObject() runtime.Object {
	c := *w
	c.annotations = slices.Clone(w.annotations)
	return &c
}

// GetNamespace implements metav1.Object.
func (w *cachedWorkload) GetNamespace() string { return w.namespace }

// SetNamespace implements metav1.Object.
func (w *cachedWorkload) SetNamespace(ns string) { w.namespace = intern(ns) }

// GetName implements metav1.Object.
func (w *cachedWorkload) GetName() string { return w.name }

// SetName implements metav1.Object.
func (w *cachedWorkload) SetName(name string) { w.name = name }

// GetGenerateName implements metav1.Object (not kept).
func (w *cachedWorkload) GetGenerateName() string { return "" }

// SetGenerateName implements metav1.Object (not kept).
func (w *cachedWorkload) SetGenerateName(string) {}

// GetUID implements metav1.Object.
func (w *cachedWorkload) GetUID() types.UID { return w.uid }

// SetUID implements metav1.Object.
func (w *cachedWorkload) SetUID(uid types.UID) { w.uid = uid }

// GetResourceVersion implements metav1.Object.
func (w *cachedWorkload) GetResourceVersion() string { return w.resourceVersion }

// SetResourceVersion implements metav1.Object.
func (w *cachedWorkload) SetResourceVersion(v string) { w.resourceVersion = v }

// GetGeneration implements metav1.Object.
func (w *cachedWorkload) GetGeneration() int64 { return w.generation }

// SetGeneration implements metav1.Object.
func (w *cachedWorkload) SetGeneration(g int64) { w.generation = g }

// GetSelfLink implements metav1.Object (not kept).
func (w *cachedWorkload) GetSelfLink() string { return "" }

// SetSelfLink implements metav1.Object (not kept).
func (w *cachedWorkload) SetSelfLink(string) {}

// GetCreationTimestamp implements metav1.Object (not kept).
func (w *cachedWorkload) GetCreationTimestamp() metav1.Time { return metav1.Time{} }

// SetCreationTimestamp implements metav1.Object (not kept).
func (w *cachedWorkload) SetCreationTimestamp(metav1.Time) {}

// GetDeletionTimestamp implements metav1.Object (not kept).
func (w *cachedWorkload) GetDeletionTimestamp() *metav1.Time { return nil }

// SetDeletionTimestamp implements metav1.Object (not kept).
func (w *cachedWorkload) SetDeletionTimestamp(*metav1.Time) {}

// GetDeletionGracePeriodSeconds implements metav1.Object (not kept).
func (w *cachedWorkload) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds implements metav1.Object (not kept).
func (w *cachedWorkload) SetDeletionGracePeriodSeconds(*int64) {}

// GetLabels implements metav1.Object (not kept).
func (w *cachedWorkload) GetLabels() map[string]string { return nil }

// SetLabels implements metav1.Object (not kept).
func (w *cachedWorkload) SetLabels(map[string]string) {}

// GetAnnotations implements metav1.Object: a new map each call, nil when
// there are none.
func (w *cachedWorkload) GetAnnotations() map[string]string {
	if len(w.annotations) == 0 {
		return nil
	}
	out := make(map[string]string, len(w.annotations)/2)
	for i := 0; i+1 < len(w.annotations); i += 2 {
		out[w.annotations[i]] = w.annotations[i+1]
	}
	return out
}

// SetAnnotations implements metav1.Object. kubectl's last-applied copy is
// not kept.
func (w *cachedWorkload) SetAnnotations(a map[string]string) {
	w.annotations = nil
	keys := slices.Sorted(maps.Keys(a))
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == lastApplied })
	if len(keys) == 0 {
		return
	}
	w.annotations = make([]string, 0, 2*len(keys))
	for _, k := range keys {
		w.annotations = append(w.annotations, intern(k), a[k])
	}
}

// GetFinalizers implements metav1.Object (not kept).
func (w *cachedWorkload) GetFinalizers() []string { return nil }

// SetFinalizers implements metav1.Object (not kept).
func (w *cachedWorkload) SetFinalizers([]string) {}

// GetOwnerReferences implements metav1.Object (not kept).
func (w *cachedWorkload) GetOwnerReferences() []metav1.OwnerReference { return nil }

// SetOwnerReferences implements metav1.Object (not kept).
func (w *cachedWorkload) SetOwnerReferences([]metav1.OwnerReference) {}

// GetManagedFields implements metav1.Object (not kept).
func (w *cachedWorkload) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields implements metav1.Object (not kept).
func (w *cachedWorkload) SetManagedFields([]metav1.ManagedFieldsEntry) {}

// stores records the store of each informer the cache makes, by the type
// of object it lists, so the controller reads its own cached types
// (cachedWorkload), which controller-runtime's typed reader cannot return.
// A namespace-scoped cache makes one informer per namespace.
type stores struct {
	mu     sync.RWMutex
	byType map[reflect.Type][]toolscache.Indexer
}

func newStores() *stores { return &stores{byType: map[reflect.Type][]toolscache.Indexer{}} }

// newInformer is cache.Options.NewInformer: client-go's informer, its store
// recorded.
func (s *stores) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, ix toolscache.Indexers) toolscache.SharedIndexInformer {
	inf := toolscache.NewSharedIndexInformer(lw, obj, resync, ix)
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return inf // one Go type for every kind: read through the client
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := reflect.TypeOf(obj)
	s.byType[t] = append(s.byType[t], inf.GetIndexer())
	return inf
}

// get returns the cached object of the type of like at key, from the
// informers of that type; ok is false when none holds it, known is false
// when the cache made no informer of that type.
func (s *stores) get(like runtime.Object, key types.NamespacedName) (obj any, ok, known bool, err error) {
	s.mu.RLock()
	ixs := s.byType[reflect.TypeOf(like)]
	s.mu.RUnlock()
	k := key.Name
	if key.Namespace != "" {
		k = key.Namespace + "/" + key.Name
	}
	for _, ix := range ixs {
		obj, ok, err := ix.GetByKey(k)
		if err != nil || ok {
			return obj, ok, true, err
		}
	}
	return nil, false, len(ixs) > 0, nil
}
