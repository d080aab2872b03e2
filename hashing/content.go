package hashing

import (
	"crypto/sha256"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Kind is the kind of a config object a pod can consume.
type Kind string

// The kinds of config objects confighash hashes.
const (
	KindConfigMap Kind = "ConfigMap"
	KindSecret    Kind = "Secret"
)

// Digest is the SHA-256 digest of one key's value.
type Digest [sha256.Size]byte

// Content is the canonical, payload-free content of a ConfigMap or Secret: the
// SHA-256 of each key's decoded value. Metadata never enters it.
type Content struct {
	Kind      Kind
	Namespace string
	Name      string
	// Keys maps every key of the object to the digest of its decoded bytes.
	Keys map[string]Digest
}

// DigestOf returns the digest of a value.
func DigestOf(value []byte) Digest { return sha256.Sum256(value) }

// ConfigMapContent normalises a ConfigMap read from the API (binaryData
// already decoded) with the rules of ContentBuilder: data and binaryData
// are one key space, and a key in both is an error, as the API server would
// refuse it.
func ConfigMapContent(cm *corev1.ConfigMap) (Content, error) {
	b := NewContentBuilder(KindConfigMap)
	for k, v := range cm.Data {
		if err := b.AddDecoded(FieldData, k, []byte(v)); err != nil {
			return Content{}, fmt.Errorf("ConfigMap %s: %w", ObjectName(cm.Namespace, cm.Name), err)
		}
	}
	for k, v := range cm.BinaryData {
		if err := b.AddDecoded(FieldBinaryData, k, v); err != nil {
			return Content{}, fmt.Errorf("ConfigMap %s: %w", ObjectName(cm.Namespace, cm.Name), err)
		}
	}
	return named(b.Done(), cm.Namespace, cm.Name), nil
}

// SecretContent normalises a Secret read from the API (data already
// decoded) with the rules of ContentBuilder: stringData is merged over the
// data, the way the API server does on write, so a manifest and the object
// read back from the cluster give the same content.
func SecretContent(s *corev1.Secret) Content {
	b := NewContentBuilder(KindSecret)
	// Neither can fail: a Go map holds no key twice, and a key in both
	// fields is no error for a Secret.
	for k, v := range s.Data {
		_ = b.AddDecoded(FieldData, k, v)
	}
	for k, v := range s.StringData {
		_ = b.AddDecoded(FieldStringData, k, []byte(v))
	}
	return named(b.Done(), s.Namespace, s.Name)
}

func named(c Content, namespace, name string) Content {
	c.Namespace, c.Name = namespace, name
	return c
}

// SortedKeys returns the object's keys in byte order.
func (c Content) SortedKeys() []string {
	keys := make([]string, 0, len(c.Keys))
	for k := range c.Keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ObjectName renders namespace/name, or name alone for an empty namespace.
func ObjectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
