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

// ConfigMapContent normalises a ConfigMap: data and binaryData are merged into
// one key space (binaryData already decoded). A key present in both is an
// error, as the API server would refuse it.
func ConfigMapContent(cm *corev1.ConfigMap) (Content, error) {
	c := newContent(KindConfigMap, cm.Namespace, cm.Name, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		c.Keys[k] = DigestOf([]byte(v))
	}
	for k, v := range cm.BinaryData {
		if _, dup := c.Keys[k]; dup {
			return Content{}, fmt.Errorf("ConfigMap %s: key %q is in both data and binaryData", ObjectName(cm.Namespace, cm.Name), k)
		}
		c.Keys[k] = DigestOf(v)
	}
	return c, nil
}

// SecretContent normalises a Secret: stringData is merged over the decoded
// data, the way the API server does on write, so a manifest and the object
// read back from the cluster give the same content.
func SecretContent(s *corev1.Secret) Content {
	c := newContent(KindSecret, s.Namespace, s.Name, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		c.Keys[k] = DigestOf(v)
	}
	for k, v := range s.StringData {
		c.Keys[k] = DigestOf([]byte(v))
	}
	return c
}

func newContent(kind Kind, namespace, name string, n int) Content {
	return Content{Kind: kind, Namespace: namespace, Name: name, Keys: make(map[string]Digest, n)}
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
