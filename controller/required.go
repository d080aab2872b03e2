package controller

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/confighash/confighash/hashing"
)

// missingKeyRef names a required key that its config lacks, as an entry of
// Input.Missing: "Kind/name key k".
func missingKeyRef(ref, key string) string { return ref + " key " + key }

// Missing lists what of use u's config the pods cannot start on: the config
// itself when it is not found and not optional, the token of a
// ServiceAccount token Secret that the token controller has not filled in
// yet (pending, see TokenPending; optional or not, as its pods read what
// the token controller writes, never the Secret as first created), or the
// required keys (RequiredKeys) its content c lacks. The controller does not
// roll, nor record a baseline, while anything is missing, and kubectl
// confighash status reports it as blocked.
func (v View) Missing(u hashing.Use, c hashing.Content, found, pending bool) []string {
	if !found {
		if u.Optional {
			return nil
		}
		return []string{u.Ref()}
	}
	var out []string
	if pending {
		out = append(out, missingKeyRef(u.Ref(), corev1.ServiceAccountTokenKey))
	}
	for _, key := range v.RequiredKeys[u.Ref()] {
		if _, ok := c.Keys[key]; !ok && (!pending || key != corev1.ServiceAccountTokenKey) {
			out = append(out, missingKeyRef(u.Ref(), key))
		}
	}
	return out
}

// TokenPending reports whether obj is a Secret of type
// kubernetes.io/service-account-token that has no token key yet: the token
// controller fills in token, ca.crt and namespace after the Secret is
// created, so what it holds before is no content its readers run (a
// secretKeyRef to token fails until the key exists, and the kubelet
// refreshes a Secret volume). obj is a Secret as the API server returns
// it, or its cached form (TransformSecret, the controller's own cache).
func TokenPending(obj client.Object) bool {
	c, err := ContentOf(obj)
	return err == nil && pendingOf(obj, c)
}

// pendingOf is TokenPending of obj, whose content is c.
func pendingOf(obj client.Object, c hashing.Content) bool {
	switch o := obj.(type) {
	case *cachedConfig:
		return o.tokenPending
	case *corev1.Secret:
		return tokenPending(o.Type, c)
	}
	return false
}

// tokenPending is TokenPending for a Secret of type t with content c.
func tokenPending(t corev1.SecretType, c hashing.Content) bool {
	_, filled := c.Keys[corev1.ServiceAccountTokenKey]
	return t == corev1.SecretTypeServiceAccountToken && !filled
}
