package controller

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/confighash/confighash/hashing"
)

// digestMarker, in the selfLink field (deprecated, never set by API servers
// since Kubernetes 1.20), marks a cached ConfigMap or Secret whose values
// were replaced by digests, so the transform is idempotent and a payload is
// never mistaken for a digest. A field rather than an annotation: a map per
// object would cost more than the digests.
const digestMarker = "confighash.dev/digests/sha256"

// lastApplied is kubectl's copy of the whole applied object, payload
// included; it is dropped from every cached object.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// TransformConfigMap is the cache transform for ConfigMaps: it keeps the
// identity metadata and replaces data and binaryData by the SHA-256 of each
// key's bytes, stored as raw 32-byte binaryData values. Labels, annotations
// and managedFields are dropped, so the cached size does not depend on the
// payload.
func TransformConfigMap(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || isDigested(&cm.ObjectMeta) {
		return obj, nil
	}
	content, err := hashing.ConfigMapContent(cm)
	if err != nil {
		return nil, err
	}
	out := &corev1.ConfigMap{TypeMeta: cm.TypeMeta, ObjectMeta: slimMeta(&cm.ObjectMeta)}
	out.BinaryData = digestValues(content)
	return out, nil
}

// TransformSecret is the cache transform for Secrets: like
// TransformConfigMap, with the digests in data. The type is kept; no value
// is.
func TransformSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok || isDigested(&s.ObjectMeta) {
		return obj, nil
	}
	out := &corev1.Secret{TypeMeta: s.TypeMeta, ObjectMeta: slimMeta(&s.ObjectMeta), Type: s.Type}
	out.Data = digestValues(hashing.SecretContent(s))
	return out, nil
}

// TransformWorkload is the cache transform for workloads: it drops
// managedFields and kubectl's last-applied copy, which the controller never
// reads.
func TransformWorkload(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
		if a := o.GetAnnotations(); a[lastApplied] != "" {
			delete(a, lastApplied)
			o.SetAnnotations(a)
		}
	}
	return obj, nil
}

func isDigested(m *metav1.ObjectMeta) bool { return m.SelfLink == digestMarker } //nolint:staticcheck // the API server never fills selfLink; the cache reuses it

// slimMeta keeps what identifies an object and its version, and marks it.
func slimMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
		SelfLink:          digestMarker, //nolint:staticcheck // see isDigested
	}
}

func digestValues(c hashing.Content) map[string][]byte {
	out := make(map[string][]byte, len(c.Keys))
	for k, d := range c.Keys {
		out[k] = append([]byte(nil), d[:]...)
	}
	return out
}

// ContentOf returns the canonical content of a ConfigMap or Secret, from
// its cached (digested) form or from a full object.
func ContentOf(obj client.Object) (hashing.Content, error) {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		if !isDigested(&o.ObjectMeta) {
			return hashing.ConfigMapContent(o)
		}
		return fromDigests(hashing.KindConfigMap, &o.ObjectMeta, o.BinaryData)
	case *corev1.Secret:
		if !isDigested(&o.ObjectMeta) {
			return hashing.SecretContent(o), nil
		}
		return fromDigests(hashing.KindSecret, &o.ObjectMeta, o.Data)
	default:
		return hashing.Content{}, fmt.Errorf("%T is not a ConfigMap or Secret", obj)
	}
}

func fromDigests(kind hashing.Kind, m *metav1.ObjectMeta, values map[string][]byte) (hashing.Content, error) {
	c := hashing.Content{Kind: kind, Namespace: m.Namespace, Name: m.Name, Keys: make(map[string]hashing.Digest, len(values))}
	for k, v := range values {
		var d hashing.Digest
		if len(v) != len(d) {
			return c, fmt.Errorf("%s %s: cached value of key %q is not a digest", kind, hashing.ObjectName(m.Namespace, m.Name), k)
		}
		copy(d[:], v)
		c.Keys[k] = d
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
