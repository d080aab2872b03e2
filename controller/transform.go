package controller

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/confighash/confighash/hashing"
)

// digestMarker opens the selfLink field (deprecated, never set by API
// servers since Kubernetes 1.20) of a cached ConfigMap or Secret whose
// values were replaced by digests; the digests follow it, packed (see
// packDigests). A string field rather than the data maps: a map per object
// costs more than its digests, and the transform stays idempotent and never
// mistakes a payload for a digest.
const digestMarker = "confighash.dev/digests/sha256:"

// lastApplied is kubectl's copy of the whole applied object, payload
// included; it is dropped from every cached object.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// TransformConfigMap is the cache transform for ConfigMaps: it keeps the
// identity metadata and replaces data and binaryData by the SHA-256 of each
// key's bytes, packed with the key names into the selfLink field (see
// digestMarker). Labels, annotations and managedFields are dropped, so the
// cached size does not depend on the payload, but for the annotation and
// the label that make a ConfigMap one the cluster fills in (FillPending).
func TransformConfigMap(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || isDigested(&cm.ObjectMeta) {
		return obj, nil
	}
	content, err := hashing.ConfigMapContent(cm)
	if err != nil {
		return nil, err
	}
	m := slimMeta(&cm.ObjectMeta, content)
	if v, ok := cm.Annotations[hashing.InjectCABundleAnnotation]; ok {
		m.Annotations = map[string]string{hashing.InjectCABundleAnnotation: v}
	}
	if v, ok := cm.Labels[hashing.InjectTrustedCABundleLabel]; ok {
		m.Labels = map[string]string{hashing.InjectTrustedCABundleLabel: v}
	}
	return &corev1.ConfigMap{TypeMeta: cm.TypeMeta, ObjectMeta: m}, nil
}

// TransformSecret is the cache transform for Secrets: like
// TransformConfigMap. The type is kept; no value is.
func TransformSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok || isDigested(&s.ObjectMeta) {
		return obj, nil
	}
	return &corev1.Secret{TypeMeta: s.TypeMeta, ObjectMeta: slimMeta(&s.ObjectMeta, hashing.SecretContent(s)), Type: s.Type}, nil
}

// TransformWorkload is the cache transform for workloads. The controller
// reads a workload for its identity (name, namespace, UID), its versions
// (resourceVersion, generation), its annotations and its pod template's, and
// the pod template's references to ConfigMaps and Secrets; it writes a merge
// patch of annotations built from those, never the object. So the cached
// form keeps exactly that: a Deployment, StatefulSet, DaemonSet or CronJob
// becomes a cachedWorkload, a type of the controller's own holding that
// metadata, the pod template's annotations and what reference discovery
// finds in its pod spec (read it with PodTemplate); a ReplicaSet or Job (which nothing here manages but
// a cache may hold) keeps its type, that metadata and the reduced template.
// Status, labels, managedFields, kubectl's last-applied copy and every
// other spec field are dropped. An unstructured workload (Argo Rollouts)
// loses status, managedFields and the last-applied copy, and its
// spec.template is reduced the same way. The transform is idempotent, as
// client-go requires.
func TransformWorkload(obj any) (any, error) {
	switch o := obj.(type) {
	case *cachedWorkload:
		return o, nil
	case *appsv1.Deployment:
		return newCachedWorkload("Deployment", &o.ObjectMeta, &o.Spec.Template)
	case *appsv1.StatefulSet:
		return newCachedWorkload("StatefulSet", &o.ObjectMeta, &o.Spec.Template)
	case *appsv1.DaemonSet:
		return newCachedWorkload("DaemonSet", &o.ObjectMeta, &o.Spec.Template)
	case *appsv1.ReplicaSet:
		out := &appsv1.ReplicaSet{TypeMeta: o.TypeMeta, ObjectMeta: leanMeta(&o.ObjectMeta)}
		out.Spec.Template = ReducePodTemplate(&o.Spec.Template)
		return out, nil
	case *batchv1.Job:
		out := &batchv1.Job{TypeMeta: o.TypeMeta, ObjectMeta: leanMeta(&o.ObjectMeta)}
		out.Spec.Template = ReducePodTemplate(&o.Spec.Template)
		return out, nil
	case *batchv1.CronJob:
		return newCachedWorkload("CronJob", &o.ObjectMeta, &o.Spec.JobTemplate.Spec.Template)
	case *unstructured.Unstructured:
		return reduceUnstructured(o)
	case metav1.Object:
		dropBookkeeping(o)
	}
	return obj, nil
}

// dropBookkeeping removes from o what the controller never reads and the
// API server and kubectl keep for themselves: managedFields and kubectl's
// last-applied copy of the object.
func dropBookkeeping(o metav1.Object) {
	o.SetManagedFields(nil)
	if a := o.GetAnnotations(); a[lastApplied] != "" {
		delete(a, lastApplied)
		o.SetAnnotations(a)
	}
}

// PodTemplate returns the pod template of a typed workload (Deployment,
// StatefulSet, DaemonSet, CronJob) as the controller reads it: from the
// cached form TransformWorkload gives (a new template each call, with the
// cached annotations and a pod spec in which reference discovery finds the
// cached uses, and nothing else) or from the object as the API server
// returns it.
func PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	switch o := obj.(type) {
	case *cachedWorkload:
		return o.podTemplate()
	case *appsv1.Deployment:
		return &o.Spec.Template, nil
	case *appsv1.StatefulSet:
		return &o.Spec.Template, nil
	case *appsv1.DaemonSet:
		return &o.Spec.Template, nil
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template, nil
	}
	return nil, fmt.Errorf("%T is not a typed workload", obj)
}

// leanMeta keeps what the controller reads of a workload's metadata: its
// identity, versions and annotations (without kubectl's last-applied copy).
func leanMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	ann := m.Annotations
	if _, ok := ann[lastApplied]; ok {
		ann = maps.Clone(ann)
		delete(ann, lastApplied)
	}
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
		Annotations:       ann,
	}
}

// ReducePodTemplate is a pod template reduced to what reference discovery
// (hashing.Discover) and the controller read: the template's annotations;
// per container (init, regular, ephemeral) that references a ConfigMap or
// Secret, its envFrom sources of them and its env entries that take a value
// from one (the reference only); the volumes that are a ConfigMap, a Secret
// or a projection of them (only those sources, with their names, items'
// keys and optional flags); and imagePullSecrets. Names of containers, env
// entries and volumes, items' paths and modes, images, commands, probes,
// resources, ports, mounts, affinity, tolerations, labels and every other
// field are not kept: discovery reads none of them.
func ReducePodTemplate(t *corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	out := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: t.Annotations}}
	s, r := &t.Spec, &out.Spec
	r.InitContainers = reduceContainers(s.InitContainers)
	r.Containers = reduceContainers(s.Containers)
	for i := range s.EphemeralContainers {
		if c, ok := reduceContainer(&s.EphemeralContainers[i].EphemeralContainerCommon); ok {
			r.EphemeralContainers = append(r.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Env: c.Env, EnvFrom: c.EnvFrom}})
		}
	}
	for i := range s.Volumes {
		if v, ok := reduceVolume(&s.Volumes[i]); ok {
			r.Volumes = append(r.Volumes, v)
		}
	}
	if len(s.ImagePullSecrets) > 0 {
		r.ImagePullSecrets = slices.Clone(s.ImagePullSecrets)
	}
	return out
}

func reduceContainers(cs []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for i := range cs {
		if c, ok := reduceContainer(&corev1.EphemeralContainerCommon{Env: cs[i].Env, EnvFrom: cs[i].EnvFrom}); ok {
			out = append(out, corev1.Container{Env: c.Env, EnvFrom: c.EnvFrom})
		}
	}
	return out
}

// reducedContainer is the part of a container reference discovery reads.
type reducedContainer struct {
	Env     []corev1.EnvVar
	EnvFrom []corev1.EnvFromSource
}

// reduceContainer keeps a container's references; ok is false when it has
// none.
func reduceContainer(c *corev1.EphemeralContainerCommon) (reducedContainer, bool) {
	var out reducedContainer
	for _, f := range c.EnvFrom {
		if f.ConfigMapRef != nil || f.SecretRef != nil {
			out.EnvFrom = append(out.EnvFrom, corev1.EnvFromSource{ConfigMapRef: f.ConfigMapRef, SecretRef: f.SecretRef})
		}
	}
	for _, e := range c.Env {
		if from := e.ValueFrom; from != nil && (from.ConfigMapKeyRef != nil || from.SecretKeyRef != nil) {
			out.Env = append(out.Env, corev1.EnvVar{ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: from.ConfigMapKeyRef, SecretKeyRef: from.SecretKeyRef}})
		}
	}
	return out, len(out.Env) > 0 || len(out.EnvFrom) > 0
}

// reduceVolume keeps a volume that is a ConfigMap, a Secret or a
// projection with one of them, with only those sources, each with its
// name, items' keys and optional flag.
func reduceVolume(v *corev1.Volume) (corev1.Volume, bool) {
	var out corev1.Volume
	src := &v.VolumeSource
	if cm := src.ConfigMap; cm != nil {
		out.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: cm.LocalObjectReference, Items: keysOnly(cm.Items), Optional: cm.Optional}
	}
	if s := src.Secret; s != nil {
		out.Secret = &corev1.SecretVolumeSource{SecretName: s.SecretName, Items: keysOnly(s.Items), Optional: s.Optional}
	}
	if p := src.Projected; p != nil {
		var sources []corev1.VolumeProjection
		for _, s := range p.Sources {
			var r corev1.VolumeProjection
			if cm := s.ConfigMap; cm != nil {
				r.ConfigMap = &corev1.ConfigMapProjection{LocalObjectReference: cm.LocalObjectReference, Items: keysOnly(cm.Items), Optional: cm.Optional}
			}
			if sec := s.Secret; sec != nil {
				r.Secret = &corev1.SecretProjection{LocalObjectReference: sec.LocalObjectReference, Items: keysOnly(sec.Items), Optional: sec.Optional}
			}
			if r.ConfigMap != nil || r.Secret != nil {
				sources = append(sources, r)
			}
		}
		if len(sources) > 0 {
			out.Projected = &corev1.ProjectedVolumeSource{Sources: sources}
		}
	}
	return out, out.ConfigMap != nil || out.Secret != nil || out.Projected != nil
}

// keysOnly is items without their paths and modes.
func keysOnly(items []corev1.KeyToPath) []corev1.KeyToPath {
	if items == nil {
		return nil
	}
	out := make([]corev1.KeyToPath, len(items))
	for i, it := range items {
		out[i] = corev1.KeyToPath{Key: it.Key}
	}
	return out
}

// reduceUnstructured is TransformWorkload for a custom resource. An Argo
// Rollout, the one the controller manages, keeps its identity, versions,
// annotations and its spec.template reduced by ReducePodTemplate; any other
// loses managedFields and the last-applied copy only.
func reduceUnstructured(u *unstructured.Unstructured) (any, error) {
	if u.GroupVersionKind().GroupKind() != RolloutGVK.GroupKind() {
		dropBookkeeping(u)
		return u, nil
	}
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetAPIVersion(u.GetAPIVersion())
	out.SetKind(u.GetKind())
	meta, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr.To(leanMeta(&metav1.ObjectMeta{
		Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
		Generation: u.GetGeneration(), CreationTimestamp: u.GetCreationTimestamp(), DeletionTimestamp: u.GetDeletionTimestamp(),
		Annotations: u.GetAnnotations(),
	})))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reducing the metadata: %w", u.GetKind(), client.ObjectKeyFromObject(u), err)
	}
	out.Object["metadata"] = meta
	m, found, err := unstructured.NestedMap(u.Object, "spec", "template")
	if err != nil || !found {
		return out, nil //nolint:nilerr // no pod template (a workloadRef): nothing the controller reads
	}
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t); err != nil {
		return u, nil //nolint:nilerr // left whole: the reconciler reports the bad template when it reads it
	}
	reduced := ReducePodTemplate(&t)
	rm, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&reduced)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reducing spec.template: %w", u.GetKind(), client.ObjectKeyFromObject(u), err)
	}
	if spec, ok := rm["spec"].(map[string]any); ok {
		for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
			cs, _ := spec[list].([]any)
			for _, c := range cs {
				if c, ok := c.(map[string]any); ok {
					if r, ok := c["resources"].(map[string]any); ok && len(r) == 0 {
						delete(c, "resources") // the converter writes the empty struct
					}
				}
			}
		}
	}
	if meta, ok := rm["metadata"].(map[string]any); ok && meta["creationTimestamp"] == nil {
		delete(meta, "creationTimestamp")
	}
	out.Object["spec"] = map[string]any{"template": rm}
	return out, nil
}

func isDigested(m *metav1.ObjectMeta) bool { return strings.HasPrefix(m.SelfLink, digestMarker) } //nolint:staticcheck // the API server never fills selfLink; the cache reuses it

// slimMeta keeps what identifies an object and its version, and carries
// the content's digests.
func slimMeta(m *metav1.ObjectMeta, c hashing.Content) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
		SelfLink:          digestMarker + packDigests(c), //nolint:staticcheck // see digestMarker
	}
}

// packDigests is, for each key of c in order, the key's length (uvarint),
// the key and its 32-byte digest: one string.
func packDigests(c hashing.Content) string {
	keys := slices.Sorted(maps.Keys(c.Keys))
	n := 0
	for _, k := range keys {
		n += binary.MaxVarintLen64 + len(k) + len(hashing.Digest{})
	}
	b := make([]byte, 0, n)
	for _, k := range keys {
		d := c.Keys[k]
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = append(b, d[:]...)
	}
	return string(b)
}

// ContentOf returns the canonical content of a ConfigMap or Secret, from
// its cached (digested) form or from a full object.
func ContentOf(obj client.Object) (hashing.Content, error) {
	switch o := obj.(type) {
	case *cachedConfig:
		return unpackDigests(o.kind(), o.namespace, o.name, o.digests)
	case *corev1.ConfigMap:
		if !isDigested(&o.ObjectMeta) {
			return hashing.ConfigMapContent(o)
		}
		return unpackDigests(hashing.KindConfigMap, o.Namespace, o.Name, o.SelfLink[len(digestMarker):]) //nolint:staticcheck // see digestMarker
	case *corev1.Secret:
		if !isDigested(&o.ObjectMeta) {
			return hashing.SecretContent(o), nil
		}
		return unpackDigests(hashing.KindSecret, o.Namespace, o.Name, o.SelfLink[len(digestMarker):]) //nolint:staticcheck // see digestMarker
	default:
		return hashing.Content{}, fmt.Errorf("%T is not a ConfigMap or Secret", obj)
	}
}

// unpackDigests reads what packDigests wrote.
func unpackDigests(kind hashing.Kind, ns, name, packed string) (hashing.Content, error) {
	c := hashing.Content{Kind: kind, Namespace: ns, Name: name, Keys: map[string]hashing.Digest{}}
	for packed != "" {
		n, w := binary.Uvarint([]byte(packed[:min(len(packed), binary.MaxVarintLen64)]))
		var d hashing.Digest
		if w <= 0 || uint64(len(packed)-w) < n+uint64(len(d)) {
			return c, fmt.Errorf("%s %s: cached value is not a digest", kind, hashing.ObjectName(ns, name))
		}
		k := packed[w : w+int(n)]
		copy(d[:], packed[w+int(n):])
		c.Keys[k] = d
		packed = packed[w+int(n)+len(d):]
	}
	return c, nil
}

// changedKeys lists the keys whose digest differs between two contents
// (added, removed or changed), sorted.
func changedKeys(old, cur hashing.Content) []string {
	var out []string
	for k, d := range cur.Keys {
		if od, ok := old.Keys[k]; !ok || od != d {
			out = append(out, k)
		}
	}
	for k := range old.Keys {
		if _, ok := cur.Keys[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
