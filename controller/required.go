package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/confighash/confighash/hashing"
)

// missingKeyRef names a required key that its config lacks, as an entry of
// Input.Missing: "Kind/name key k".
func missingKeyRef(ref, key string) string { return ref + " key " + key }

// Missing lists what of use u's config the pods cannot start on: the config
// itself when it is not found and not optional, the key pending that the
// cluster has not written yet into a config it fills in (a ServiceAccount
// token Secret's token, an OpenShift CA bundle ConfigMap's bundle; see
// FillPending; optional or not, as its pods read what the cluster writes,
// never the config as first created), or the required keys (RequiredKeys)
// its content c lacks. The controller does not roll, nor record a
// baseline, while anything is missing, and kubectl confighash status
// reports it as blocked.
func (v View) Missing(u hashing.Use, c hashing.Content, found bool, pending string) []string {
	if !found {
		if u.Optional {
			return nil
		}
		return []string{u.Ref()}
	}
	var out []string
	if pending != "" {
		out = append(out, missingKeyRef(u.Ref(), pending))
	}
	for _, key := range v.RequiredKeys[u.Ref()] {
		if _, ok := c.Keys[key]; !ok && key != pending {
			out = append(out, missingKeyRef(u.Ref(), key))
		}
	}
	return out
}

// FillPending returns the key that the cluster has yet to write into obj,
// a config whose content the cluster fills in after it is created
// (hashing.ClusterFilled): token of a Secret of type
// kubernetes.io/service-account-token (the token controller writes token,
// ca.crt and namespace), service-ca.crt of a ConfigMap annotated
// service.beta.openshift.io/inject-cabundle: "true" (the service-ca
// operator), ca-bundle.crt of a ConfigMap labelled
// config.openshift.io/inject-trusted-cabundle: "true" (the Cluster Network
// Operator). Until that key is there, what the config holds is no content
// its readers run (a key reference to it fails, and the kubelet refreshes a
// volume). It is "" for any other config, and once the key is there. obj is
// a ConfigMap or Secret as the API server returns it, in the form of the
// cache transforms (TransformConfigMap, TransformSecret), or the
// controller's own cached form (cacheConfig).
func FillPending(obj client.Object) string {
	c, err := ContentOf(obj)
	if err != nil {
		return ""
	}
	return pendingOf(obj, c)
}

// pendingOf is FillPending of obj, whose content is c.
func pendingOf(obj client.Object, c hashing.Content) string {
	switch o := obj.(type) {
	case *cachedConfig:
		return o.pending
	case *corev1.Secret:
		return fillPending(hashing.KindSecret, string(o.Type), &o.ObjectMeta, c)
	case *corev1.ConfigMap:
		return fillPending(hashing.KindConfigMap, "", &o.ObjectMeta, c)
	}
	return ""
}

// fillPending is FillPending of a config of this kind, Secret type,
// metadata and content.
func fillPending(kind hashing.Kind, secretType string, m *metav1.ObjectMeta, c hashing.Content) string {
	key, filled := hashing.ClusterFilled(kind, secretType, m.Annotations, m.Labels)
	if _, ok := c.Keys[key]; !filled || ok {
		return ""
	}
	return key
}
