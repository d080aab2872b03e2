package hashing

// The objects whose content the cluster writes, not the render (see
// ClusterFilled).
const (
	// ServiceAccountTokenType is the type of a Secret that holds a
	// long-lived API token of a ServiceAccount: the token controller
	// writes token, ca.crt and namespace into it.
	ServiceAccountTokenType = "kubernetes.io/service-account-token"
	// InjectCABundleAnnotation, "true" on a ConfigMap, has OpenShift's
	// service-ca operator add or update its key service-ca.crt (the other
	// keys are kept).
	InjectCABundleAnnotation = "service.beta.openshift.io/inject-cabundle"
	// InjectTrustedCABundleLabel, "true" on a ConfigMap, has OpenShift's
	// Cluster Network Operator take it over and write its key
	// ca-bundle.crt (the data it held is deleted).
	InjectTrustedCABundleLabel = "config.openshift.io/inject-trusted-cabundle"
)

// ClusterFilled reports whether the cluster fills in the content of a
// config of this kind, Secret type (empty for a ConfigMap), annotations and
// labels, and which key it writes, whose presence marks it filled in:
//
//   - a Secret of type kubernetes.io/service-account-token: key token;
//   - a ConfigMap annotated service.beta.openshift.io/inject-cabundle: "true"
//     (OpenShift's service-ca operator): key service-ca.crt;
//   - a ConfigMap labelled config.openshift.io/inject-trusted-cabundle: "true"
//     (OpenShift's Cluster Network Operator): key ca-bundle.crt.
//
// A chart or a kustomization renders such a config empty, or nearly so, and
// the cluster writes its content after the apply: what the render holds is
// never what the pods read. The render side takes it as external, the
// controller holds its readers back until the key is there (HASHING.md
// section 6).
func ClusterFilled(kind Kind, secretType string, annotations, labels map[string]string) (key string, filled bool) {
	switch kind {
	case KindSecret:
		if secretType == ServiceAccountTokenType {
			return "token", true
		}
	case KindConfigMap:
		if annotations[InjectCABundleAnnotation] == "true" {
			return "service-ca.crt", true
		}
		if labels[InjectTrustedCABundleLabel] == "true" {
			return "ca-bundle.crt", true
		}
	}
	return "", false
}

// ClusterFilledMarker reports whether an annotation (label false) or a
// label of that name can make a config one the cluster fills in
// (ClusterFilled), whatever its value: a reader that does not keep the
// metadata leaves such a config to one that does.
func ClusterFilledMarker(label bool, name string) bool {
	if label {
		return name == InjectTrustedCABundleLabel
	}
	return name == InjectCABundleAnnotation
}
