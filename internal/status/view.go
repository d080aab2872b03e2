package status

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/annotations"
)

// view is what the controller reads from one workload. It mirrors the
// controller's unexported inspect (controller/workload.go), which a later
// refactor should export so that both share one copy.
type view struct {
	Managed bool
	// Uses are the configs the controller hashes; External the Kind/name of
	// those the render-time hash does not cover.
	Uses     []hashing.Use
	External map[string]bool
	// RenderHash is the usable render-time hash; RawRenderHash as found.
	RenderHash, RawRenderHash string
	UnknownHash               bool
	ControllerHash            string
	ControllerBase            string
	ControllerKeyID           string
	Baseline                  string
}

type keys struct {
	hash, keyID, external, enabled                            string
	controllerHash, controllerBase, controllerKeyID, baseline string
}

func newKeys(prefix string) keys {
	return keys{
		hash:            annotations.Key(prefix, annotations.Hash),
		keyID:           annotations.Key(prefix, annotations.KeyID),
		external:        annotations.Key(prefix, annotations.External),
		enabled:         annotations.Key(prefix, annotations.Enabled),
		controllerHash:  annotations.Key(prefix, annotations.ControllerHash),
		controllerBase:  annotations.Key(prefix, annotations.ControllerBase),
		controllerKeyID: annotations.Key(prefix, annotations.ControllerKeyID),
		baseline:        annotations.Key(prefix, annotations.ExternalBaseline),
	}
}

// inspect reads a workload in namespace ns the way the controller does.
func inspect(ns string, meta map[string]string, tmpl *corev1.PodTemplateSpec, k keys, keyID string) view {
	var v view
	if tmpl == nil || meta[k.enabled] == "false" {
		return v
	}
	ta := tmpl.Annotations
	all := ta[k.hash] != "" || meta[k.external] != "" || meta[k.enabled] == "true" ||
		isTrue(meta[controller.WaveAnnotation]) || isTrue(meta[controller.ReloaderAutoAnnotation])
	kinds := map[hashing.Kind]bool{
		hashing.KindConfigMap: isTrue(meta[controller.ReloaderCMAutoAnnotation]),
		hashing.KindSecret:    isTrue(meta[controller.ReloaderSecAutoAnnotation]),
	}
	var named []hashing.Use
	for _, n := range splitNames(meta[controller.ReloaderCMReloadAnnotation], ns) {
		named = append(named, hashing.Use{Kind: hashing.KindConfigMap, Name: n, All: true, Optional: true})
	}
	for _, n := range splitNames(meta[controller.ReloaderSecReloadAnnotation], ns) {
		named = append(named, hashing.Use{Kind: hashing.KindSecret, Name: n, All: true, Optional: true})
	}
	if !all && !kinds[hashing.KindConfigMap] && !kinds[hashing.KindSecret] && len(named) == 0 {
		return v
	}
	v.Managed = true
	v.RawRenderHash = ta[k.hash]
	v.RenderHash = v.RawRenderHash
	switch rendered := ta[k.keyID]; {
	case v.RawRenderHash == "":
	case !hashing.IsValue(v.RawRenderHash) || strings.HasPrefix(v.RawRenderHash, hashing.KeyedPrefix) != (keyID != ""):
		v.RenderHash, v.UnknownHash = "", true
	case keyID != "" && rendered != "" && rendered != keyID:
		v.RenderHash, v.UnknownHash = "", true
	}
	v.ControllerHash, v.ControllerBase, v.ControllerKeyID = ta[k.controllerHash], ta[k.controllerBase], ta[k.controllerKeyID]
	v.Baseline = meta[k.baseline]
	v.External = map[string]bool{}
	seen := map[string]bool{}
	for _, u := range hashing.Discover(&tmpl.Spec) {
		seen[u.Ref()] = true
		if all || kinds[u.Kind] || hasNamed(named, u) {
			v.Uses = append(v.Uses, u)
		}
	}
	for _, u := range named {
		if !seen[u.Ref()] {
			v.Uses = append(v.Uses, u)
			v.External[u.Ref()] = true
		}
	}
	hashing.SortUses(v.Uses)
	listed := annotations.ParseExternal(meta[k.external])
	for _, u := range v.Uses {
		if v.RenderHash == "" || listed[u.Ref()] {
			v.External[u.Ref()] = true
		}
	}
	return v
}

func hasNamed(named []hashing.Use, u hashing.Use) bool {
	for _, n := range named {
		if n.Kind == u.Kind && n.Name == u.Name {
			return true
		}
	}
	return false
}

func isTrue(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "true") }

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// splitNames reads Reloader's list; an entry naming another namespace is
// dropped, as the controller drops it.
func splitNames(s, ns string) []string {
	var out []string
	for _, item := range splitList(s) {
		if i := strings.LastIndexByte(item, '/'); i >= 0 {
			if item[:i] != ns {
				continue
			}
			item = item[i+1:]
		}
		if item != "" {
			out = append(out, item)
		}
	}
	return out
}
