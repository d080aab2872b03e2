package inject

import "strings"

// Relevant reports whether a document of this apiVersion and kind can change
// the analysis: a core ConfigMap or Secret, a List that may hold them, or a
// kind whose pod template confighash reads. Anything else a stream carries
// (CustomResourceDefinitions, RBAC, Services) can be passed through unread.
// A configured workload kind is read in every API group, so that one given
// with the wrong group is warned about (nearMiss).
func (o Options) Relevant(apiVersion, kind string) bool {
	if strings.HasSuffix(kind, "List") {
		return true
	}
	for _, w := range o.Workloads {
		if w.Kind == kind {
			return true
		}
	}
	if apiVersion == "v1" && (kind == "ConfigMap" || kind == "Secret") {
		return true
	}
	group, _, _ := strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = ""
	}
	_, ok := o.templatePath(group, kind)
	return ok
}
