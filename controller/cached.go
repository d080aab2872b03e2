package controller

import (
	"encoding/binary"
	"encoding/json"
	"errors"
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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/confighash/confighash/hashing"
)

// cachedWorkload is the cached form of a Deployment, StatefulSet, DaemonSet
// or CronJob (TransformWorkload): what the controller's decisions read and
// nothing else. Its identity, versions and annotations (without kubectl's
// last-applied copy, as key/value pairs with the keys and the namespace
// interned), the pod template's annotations (likewise), and what reference
// discovery finds in the pod spec (hashing.Discover: per config its kind,
// name, whole or keys, and optional flag) with the keys a pod cannot start
// without (hashing.DiscoverRequired), packed in one string. Decisions
// read only those two of a pod template; PodTemplate gives a template that
// has them. It implements client.Object so the informer, its key function
// and controller-runtime's event handlers take it; the controller reads it
// from the informer's store (see stores), not through controller-runtime's
// typed reader, and never writes it.
type cachedWorkload struct {
	cachedMeta
	kind       string
	generation int64
	// annotations and templateAnnotations hold key, value, key, value, ...
	// in key order.
	annotations, templateAnnotations []string
	// uses are the pod spec's uses of configs, packed (see packUses).
	uses string
}

var _ client.Object = &cachedWorkload{}

// newCachedWorkload is the cached form of a workload of kind with metadata
// m and pod template t.
func newCachedWorkload(kind string, m *metav1.ObjectMeta, t *corev1.PodTemplateSpec) (*cachedWorkload, error) {
	w := &cachedWorkload{cachedMeta: newCachedMeta(m), kind: kind, generation: m.Generation,
		templateAnnotations: pairs(t.Annotations, ""), uses: packUses(hashing.DiscoverRequired(&t.Spec))}
	w.SetAnnotations(m.Annotations)
	return w, nil
}

// intern returns the one copy of s this process keeps: namespaces and
// annotation keys repeat across every cached object.
func intern(s string) string { return unique.Make(s).Value() }

// pairs is m as key, value, key, value, ... in key order, the keys
// interned, without the key skip; nil when empty.
func pairs(m map[string]string, skip string) []string {
	keys := slices.Sorted(maps.Keys(m))
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == skip })
	if len(keys) == 0 {
		return nil
	}
	out := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		out = append(out, intern(k), m[k])
	}
	return out
}

// fromPairs is the map of pairs; nil when empty.
func fromPairs(p []string) map[string]string {
	if len(p) == 0 {
		return nil
	}
	out := make(map[string]string, len(p)/2)
	for i := 0; i+1 < len(p); i += 2 {
		out[p[i]] = p[i+1]
	}
	return out
}

// Flags of a packed use.
const (
	useSecret byte = 1 << iota
	useAll
	useOptional
)

// packUses packs uses: per use a flags byte, its name, its keys and its
// required keys (each a count, then each), lengths as uvarints.
func packUses(uses []hashing.Use, required map[string][]string) string {
	var b []byte
	for _, u := range uses {
		var f byte
		if u.Kind == hashing.KindSecret {
			f |= useSecret
		}
		if u.All {
			f |= useAll
		}
		if u.Optional {
			f |= useOptional
		}
		b = append(b, f)
		b = appendString(b, u.Name)
		b = binary.AppendUvarint(b, uint64(len(u.Keys)))
		for _, k := range u.Keys {
			b = appendString(b, k)
		}
		req := required[u.Ref()]
		b = binary.AppendUvarint(b, uint64(len(req)))
		for _, k := range req {
			b = appendString(b, k)
		}
	}
	return string(b)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// unpackUses reads what packUses wrote: the uses and the required keys by
// Kind/name.
func unpackUses(packed string) ([]hashing.Use, map[string][]string, error) {
	var out []hashing.Use
	required := map[string][]string{}
	r := packedReader{s: packed}
	for !r.done() {
		f := r.byte()
		u := hashing.Use{Kind: hashing.KindConfigMap, Name: r.string(), All: f&useAll != 0, Optional: f&useOptional != 0}
		if f&useSecret != 0 {
			u.Kind = hashing.KindSecret
		}
		n := r.uvarint()
		for i := uint64(0); i < n && r.err == nil; i++ {
			u.Keys = append(u.Keys, r.string())
		}
		n = r.uvarint()
		for i := uint64(0); i < n && r.err == nil; i++ {
			required[u.Ref()] = append(required[u.Ref()], r.string())
		}
		if r.err != nil {
			return nil, nil, r.err
		}
		out = append(out, u)
	}
	return out, required, nil
}

// packedReader reads a packed string; the first damage sets err.
type packedReader struct {
	s   string
	err error
}

var errDamaged = errors.New("damaged")

func (r *packedReader) done() bool { return r.err != nil || r.s == "" }

func (r *packedReader) byte() byte {
	if r.s == "" {
		r.err = errDamaged
		return 0
	}
	c := r.s[0]
	r.s = r.s[1:]
	return c
}

func (r *packedReader) uvarint() uint64 {
	n, w := binary.Uvarint([]byte(r.s[:min(len(r.s), binary.MaxVarintLen64)]))
	if w <= 0 {
		r.err = errDamaged
		return 0
	}
	r.s = r.s[w:]
	return n
}

func (r *packedReader) string() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.s)) {
		r.err = errDamaged
		return ""
	}
	v := r.s[:n]
	r.s = r.s[n:]
	return v
}

// podTemplate is a pod template with the cached annotations whose pod spec
// hashing.DiscoverRequired reads as the cached uses and required keys (one
// container referring to each config: whole through envFrom, by key through
// env, a key optional unless required), a new value each call. Nothing else of the workload's template is in it.
func (w *cachedWorkload) podTemplate() (*corev1.PodTemplateSpec, error) {
	uses, required, err := unpackUses(w.uses)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: cached pod template: %w", w.kind, w.namespace, w.name, err)
	}
	t := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: fromPairs(w.templateAnnotations)}}
	if len(uses) == 0 {
		return t, nil
	}
	var c corev1.Container
	for _, u := range uses {
		ref := corev1.LocalObjectReference{Name: u.Name}
		var optional *bool
		if u.Optional {
			optional = ptr.To(true)
		}
		switch {
		case u.All && u.Kind == hashing.KindSecret:
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref, Optional: optional}})
		case u.All:
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref, Optional: optional}})
		}
		req := required[u.Ref()]
		keyRef := func(k string, optional *bool) {
			from := &corev1.EnvVarSource{}
			if u.Kind == hashing.KindSecret {
				from.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: ref, Key: k, Optional: optional}
			} else {
				from.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: ref, Key: k, Optional: optional}
			}
			c.Env = append(c.Env, corev1.EnvVar{ValueFrom: from})
		}
		for _, k := range u.Keys {
			// Optional unless required; a use that is not optional and has
			// no required ref otherwise keeps its keys required.
			keyOptional := optional
			if !u.Optional && len(req) > 0 && !slices.Contains(req, k) {
				keyOptional = ptr.To(true)
			}
			keyRef(k, keyOptional)
		}
		// A required key of a config also consumed whole: discovery drops
		// the keys of a whole use, hashing.DiscoverRequired reads them.
		for _, k := range req {
			if !slices.Contains(u.Keys, k) {
				keyRef(k, nil)
			}
		}
	}
	t.Spec.Containers = []corev1.Container{c}
	return t, nil
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
	}{w.kind, metav1.ObjectMeta{Name: w.name, Namespace: w.namespace, UID: w.GetUID(), ResourceVersion: w.resourceVersion,
		Generation: w.generation, Annotations: w.GetAnnotations()}, t})
}

// GetObjectKind implements runtime.Object; the cached form carries no
// apiVersion or kind.
func (w *cachedWorkload) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (w *cachedWorkload) DeepCopyObject() runtime.Object {
	c := *w
	c.annotations = slices.Clone(w.annotations)
	c.templateAnnotations = slices.Clone(w.templateAnnotations)
	return &c
}

// GetAnnotations implements metav1.Object: a new map each call, nil when
// there are none.
func (w *cachedWorkload) GetAnnotations() map[string]string { return fromPairs(w.annotations) }

// SetAnnotations implements metav1.Object. kubectl's last-applied copy is
// not kept.
func (w *cachedWorkload) SetAnnotations(a map[string]string) { w.annotations = pairs(a, lastApplied) }

// GetGeneration implements metav1.Object.
func (w *cachedWorkload) GetGeneration() int64 { return w.generation }

// SetGeneration implements metav1.Object.
func (w *cachedWorkload) SetGeneration(g int64) { w.generation = g }

// cachedConfig is the cached form of a ConfigMap or Secret in the
// controller's own cache (see CacheOptions): identity and resourceVersion,
// and the SHA-256 of each key's value, packed with the key names in one
// string (see packDigests). No value, label or annotation: pending is
// FillPending of the ConfigMap or Secret it was made from, which reads
// them.
type cachedConfig struct {
	cachedMeta
	secret  bool
	pending string
	digests string
}

var _ client.Object = &cachedConfig{}

// cacheConfig is the cache transform of ConfigMaps and Secrets in the
// controller's own cache: a cachedConfig. It is idempotent.
func cacheConfig(obj any) (any, error) {
	var m *metav1.ObjectMeta
	var secretType string
	secret := false
	switch o := obj.(type) {
	case *cachedConfig:
		return o, nil
	case *corev1.ConfigMap:
		m = &o.ObjectMeta
	case *corev1.Secret:
		m, secret, secretType = &o.ObjectMeta, true, string(o.Type)
	default:
		return obj, nil
	}
	c, err := ContentOf(obj.(client.Object))
	if err != nil {
		return nil, err
	}
	cc := &cachedConfig{cachedMeta: newCachedMeta(m), secret: secret, digests: packDigests(c)}
	cc.pending = fillPending(cc.kind(), secretType, m, c)
	return cc, nil
}

func (c *cachedConfig) kind() hashing.Kind {
	if c.secret {
		return hashing.KindSecret
	}
	return hashing.KindConfigMap
}

// GetObjectKind implements runtime.Object; the cached form carries no
// apiVersion or kind.
func (c *cachedConfig) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (c *cachedConfig) DeepCopyObject() runtime.Object {
	cp := *c
	return &cp
}

// cachedMeta is the metadata the controller reads of every cached object
// of its own types: identity, resourceVersion and creation time (whole
// seconds since the epoch, as the API server gives it), the namespace
// interned. It implements metav1.Object; what it does not keep reads as
// empty and is dropped when set.
type cachedMeta struct {
	name, namespace string
	uid             compactUID
	resourceVersion string
	created         int64
}

func newCachedMeta(m *metav1.ObjectMeta) cachedMeta {
	c := cachedMeta{name: m.Name, namespace: intern(m.Namespace), uid: newCompactUID(m.UID), resourceVersion: m.ResourceVersion}
	c.SetCreationTimestamp(m.CreationTimestamp)
	return c
}

// compactUID holds a UID in the canonical UUID form the API server gives
// (36 characters, lowercase) as its 16 bytes; any other as it is.
type compactUID struct {
	uuid  [16]byte
	other types.UID
}

func newCompactUID(uid types.UID) compactUID {
	var c compactUID
	if len(uid) != 36 {
		return compactUID{other: uid}
	}
	j := 0
	for i := 0; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if uid[i] != '-' {
				return compactUID{other: uid}
			}
			continue
		}
		hi, lo := fromHex(uid[i]), fromHex(uid[i+1])
		if hi < 0 || lo < 0 {
			return compactUID{other: uid}
		}
		c.uuid[j] = byte(hi<<4 | lo)
		j++
		i++
	}
	if c.uuid == [16]byte{} {
		return compactUID{other: uid} // the zero value reads as no UID
	}
	return c
}

func fromHex(b byte) int {
	switch {
	case b >= '0' && b <= '9':
		return int(b - '0')
	case b >= 'a' && b <= 'f':
		return int(b-'a') + 10
	}
	return -1
}

func (c compactUID) uid() types.UID {
	if c.uuid == [16]byte{} {
		return c.other
	}
	const hexDigits = "0123456789abcdef"
	b := make([]byte, 0, 36)
	for i, v := range c.uuid {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[v>>4], hexDigits[v&0xf])
	}
	return types.UID(b)
}

// GetNamespace implements metav1.Object.
func (m *cachedMeta) GetNamespace() string { return m.namespace }

// SetNamespace implements metav1.Object.
func (m *cachedMeta) SetNamespace(ns string) { m.namespace = intern(ns) }

// GetName implements metav1.Object.
func (m *cachedMeta) GetName() string { return m.name }

// SetName implements metav1.Object.
func (m *cachedMeta) SetName(name string) { m.name = name }

// GetGenerateName implements metav1.Object (not kept).
func (m *cachedMeta) GetGenerateName() string { return "" }

// SetGenerateName implements metav1.Object (not kept).
func (m *cachedMeta) SetGenerateName(string) {}

// GetUID implements metav1.Object.
func (m *cachedMeta) GetUID() types.UID { return m.uid.uid() }

// SetUID implements metav1.Object.
func (m *cachedMeta) SetUID(uid types.UID) { m.uid = newCompactUID(uid) }

// GetResourceVersion implements metav1.Object.
func (m *cachedMeta) GetResourceVersion() string { return m.resourceVersion }

// SetResourceVersion implements metav1.Object.
func (m *cachedMeta) SetResourceVersion(v string) { m.resourceVersion = v }

// GetSelfLink implements metav1.Object (not kept).
func (m *cachedMeta) GetSelfLink() string { return "" }

// SetSelfLink implements metav1.Object (not kept).
func (m *cachedMeta) SetSelfLink(string) {}

// GetCreationTimestamp implements metav1.Object.
func (m *cachedMeta) GetCreationTimestamp() metav1.Time {
	if m.created == 0 {
		return metav1.Time{}
	}
	return metav1.Unix(m.created, 0)
}

// SetCreationTimestamp implements metav1.Object (to the second, which is
// all the API server keeps).
func (m *cachedMeta) SetCreationTimestamp(t metav1.Time) {
	m.created = 0
	if !t.IsZero() {
		m.created = t.Unix()
	}
}

// GetDeletionTimestamp implements metav1.Object (not kept).
func (m *cachedMeta) GetDeletionTimestamp() *metav1.Time { return nil }

// SetDeletionTimestamp implements metav1.Object (not kept).
func (m *cachedMeta) SetDeletionTimestamp(*metav1.Time) {}

// GetDeletionGracePeriodSeconds implements metav1.Object (not kept).
func (m *cachedMeta) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds implements metav1.Object (not kept).
func (m *cachedMeta) SetDeletionGracePeriodSeconds(*int64) {}

// GetLabels implements metav1.Object (not kept).
func (m *cachedMeta) GetLabels() map[string]string { return nil }

// SetLabels implements metav1.Object (not kept).
func (m *cachedMeta) SetLabels(map[string]string) {}

// GetFinalizers implements metav1.Object (not kept).
func (m *cachedMeta) GetFinalizers() []string { return nil }

// SetFinalizers implements metav1.Object (not kept).
func (m *cachedMeta) SetFinalizers([]string) {}

// GetOwnerReferences implements metav1.Object (not kept).
func (m *cachedMeta) GetOwnerReferences() []metav1.OwnerReference { return nil }

// SetOwnerReferences implements metav1.Object (not kept).
func (m *cachedMeta) SetOwnerReferences([]metav1.OwnerReference) {}

// GetManagedFields implements metav1.Object (not kept).
func (m *cachedMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields implements metav1.Object (not kept).
func (m *cachedMeta) SetManagedFields([]metav1.ManagedFieldsEntry) {}

// GetGeneration implements metav1.Object (not kept).
func (m *cachedMeta) GetGeneration() int64 { return 0 }

// SetGeneration implements metav1.Object (not kept).
func (m *cachedMeta) SetGeneration(int64) {}

// GetAnnotations implements metav1.Object (not kept).
func (m *cachedMeta) GetAnnotations() map[string]string { return nil }

// SetAnnotations implements metav1.Object (not kept).
func (m *cachedMeta) SetAnnotations(map[string]string) {}

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
	if _, ok := obj.(*unstructured.Unstructured); ok {
		// One Go type for every kind: read through the client.
		return toolscache.NewSharedIndexInformer(lw, obj, resync, ix)
	}
	// The controller reads its own types by key, never lists them by
	// namespace: no namespace index (a set holding every key).
	ix = maps.Clone(ix)
	delete(ix, toolscache.NamespaceIndex)
	inf := toolscache.NewSharedIndexInformer(lw, obj, resync, ix)
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
