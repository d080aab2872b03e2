package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/annotations"
)

// Opt-in annotations of the tools confighash replaces, honoured so users can
// migrate without editing every workload (docs/controller.md maps them).
const (
	WaveAnnotation              = "wave.pusher.com/update-on-config-change"
	ReloaderAutoAnnotation      = "reloader.stakater.com/auto"
	ReloaderCMAutoAnnotation    = "configmap.reloader.stakater.com/auto"
	ReloaderSecAutoAnnotation   = "secret.reloader.stakater.com/auto"
	ReloaderCMReloadAnnotation  = "configmap.reloader.stakater.com/reload"
	ReloaderSecReloadAnnotation = "secret.reloader.stakater.com/reload"
)

// keys are the confighash annotation keys under one prefix.
type keys struct {
	hash, keyID, external, enabled                                            string
	controllerHash, controllerBase, controllerKeyID, controllerUses, baseline string
	renderBaseline                                                            string
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
		controllerUses:  annotations.Key(prefix, annotations.ControllerUses),
		baseline:        annotations.Key(prefix, annotations.ExternalBaseline),
		renderBaseline:  annotations.Key(prefix, annotations.RenderBaseline),
	}
}

// View is what the controller reads from one workload: whether it manages
// it, what its pods consume, which of that is external, and the recorded
// hashes. It is computed from the object alone, without the cache.
type View struct {
	Managed bool
	// Uses are the configs to hash; External holds the Kind/name of those the
	// render-time hash does not cover.
	Uses     []hashing.Use
	External map[string]bool
	// RequiredKeys lists, by Kind/name, the consumed keys that a pod cannot
	// start without (referenced without optional: true).
	RequiredKeys map[string][]string
	// RenderHash is the usable render-time hash, RawRenderHash the annotation
	// as found; Mismatch says why a hash that is present is not usable
	// (another HMAC mode or key, or an unknown version), and is "" when it
	// is usable or absent.
	RenderHash    string
	RawRenderHash string
	Mismatch      hashing.Mismatch
	// OtherKeyID is the key id of a keyed render-time hash made with a key
	// other than the controller's (Mismatch is hashing.MismatchOtherKey).
	OtherKeyID string
	// UsesPrint is the fingerprint of Uses (UsesPrint): a change of it is a
	// change of the pod spec, which rolls the pods by itself.
	UsesPrint string
	// The controller's own record.
	ControllerHash  string
	ControllerBase  string
	ControllerKeyID string
	ControllerUses  string
	Baseline        string
	// RenderBaseline is the live hash of the in-stream configs recorded for
	// the pods of RawRenderHash (see annotations.RenderBaseline); empty when
	// there is none, or one recorded for another render.
	RenderBaseline string
}

// Inspect reads a workload as the controller does: its annotations meta
// and pod template tmpl, in namespace ns, under the annotation prefix (empty:
// the default). keyID is the HMAC key id of the reader, empty without a
// key: a render-time hash of the other mode, or made with another key,
// cannot be compared and counts as unknown. kubectl confighash status calls
// it to report what the controller would see.
func Inspect(ns string, meta map[string]string, tmpl *corev1.PodTemplateSpec, prefix, keyID string) View {
	return inspect(ns, meta, tmpl, newKeys(prefix), keyID)
}

// inspect is Inspect with the keys of the prefix made once.
func inspect(ns string, meta map[string]string, tmpl *corev1.PodTemplateSpec, k keys, keyID string) View {
	var v View
	if tmpl == nil || meta[k.enabled] == "false" {
		return v
	}
	ta := tmpl.Annotations
	scope := scopeOf(ns, meta, ta, k)
	if !scope.any() {
		return v
	}
	v.Managed = true
	v.RawRenderHash = ta[k.hash]
	v.RenderHash = v.RawRenderHash
	if v.RawRenderHash != "" {
		if v.Mismatch = hashing.CompareMode(v.RawRenderHash, ta[k.keyID], keyID); v.Mismatch != "" {
			v.RenderHash = ""
		}
		if v.Mismatch == hashing.MismatchOtherKey {
			v.OtherKeyID = ta[k.keyID]
		}
	}
	v.ControllerHash, v.ControllerBase, v.ControllerKeyID = ta[k.controllerHash], ta[k.controllerBase], ta[k.controllerKeyID]
	v.ControllerUses = ta[k.controllerUses]
	v.Baseline = meta[k.baseline]
	v.RenderBaseline = ParseRenderBaseline(meta[k.renderBaseline], v.RawRenderHash)

	discovered, required := hashing.DiscoverRequired(&tmpl.Spec)
	v.External = map[string]bool{}
	seen := map[string]bool{}
	for _, u := range discovered {
		seen[u.Ref()] = true
		if scope.covers(u) {
			v.Uses = append(v.Uses, u)
		}
	}
	// Reloader's named configs are watched even when the pod spec does not
	// reference them; they are never in the render-time hash.
	for _, u := range scope.named {
		if !seen[u.Ref()] {
			v.Uses = append(v.Uses, u)
			v.External[u.Ref()] = true
		}
	}
	hashing.SortUses(v.Uses)
	v.UsesPrint = UsesPrint(v.Uses)
	v.RequiredKeys = required
	listed := annotations.ParseExternal(meta[k.external])
	for _, u := range v.Uses {
		if v.RenderHash == "" || listed[u.Ref()] {
			v.External[u.Ref()] = true
		}
	}
	return v
}

// FormatRenderBaseline is the render-baseline annotation: the pods of the
// render-time hash render read in-stream content of hash live.
func FormatRenderBaseline(render, live string) string { return render + "=" + live }

// ParseRenderBaseline returns the live hash a render-baseline annotation
// records for the render-time hash render, or "" when it records none, or
// one for another render.
func ParseRenderBaseline(s, render string) string {
	r, live, ok := strings.Cut(s, "=")
	if !ok || render == "" || r != render {
		return ""
	}
	return live
}

// UsesPrint is a short fingerprint of how a pod spec consumes configs:
// which ConfigMaps and Secrets, whole or which keys. The hashes the
// controller records depend on it as much as on the content, so a record
// made under another fingerprint describes another pod spec: the change of
// pod spec rolled the pods, which read the live content, and the record is
// made again rather than compared.
func UsesPrint(uses []hashing.Use) string {
	sorted := slices.Clone(uses)
	hashing.SortUses(sorted)
	h := sha256.New()
	for _, u := range sorted {
		keys := slices.Clone(u.Keys)
		slices.Sort(keys)
		keys = slices.Compact(keys)
		fmt.Fprintf(h, "%q %q %t %q\n", u.Kind, u.Name, u.All, keys)
	}
	return hex.EncodeToString(h.Sum(nil))[:usesPrintLen]
}

// usesPrintLen is the length of a UsesPrint: 64 bits tell pod specs apart.
const usesPrintLen = 16

// scope is which configs a workload asked to be watched for.
type scope struct {
	all   bool
	kinds map[hashing.Kind]bool
	named []hashing.Use
}

func (s scope) any() bool { return s.all || len(s.kinds) > 0 || len(s.named) > 0 }

// covers reports whether a discovered use is in scope.
func (s scope) covers(u hashing.Use) bool {
	if s.all || s.kinds[u.Kind] {
		return true
	}
	for _, n := range s.named {
		if n.Kind == u.Kind && n.Name == u.Name {
			return true
		}
	}
	return false
}

// scopeOf reads the opt-in annotations: confighash's own (the render-time
// hash, the external list, enabled: "true"), Wave's and Reloader's.
func scopeOf(ns string, meta, tmplAnn map[string]string, k keys) scope {
	var s scope
	switch {
	case tmplAnn[k.hash] != "", meta[k.external] != "", meta[k.enabled] == "true",
		isTrue(meta[WaveAnnotation]), isTrue(meta[ReloaderAutoAnnotation]):
		s.all = true
	}
	s.kinds = map[hashing.Kind]bool{}
	if isTrue(meta[ReloaderCMAutoAnnotation]) {
		s.kinds[hashing.KindConfigMap] = true
	}
	if isTrue(meta[ReloaderSecAutoAnnotation]) {
		s.kinds[hashing.KindSecret] = true
	}
	for name := range splitNames(meta[ReloaderCMReloadAnnotation], ns) {
		s.named = append(s.named, hashing.Use{Kind: hashing.KindConfigMap, Name: name, All: true, Optional: true})
	}
	for name := range splitNames(meta[ReloaderSecReloadAnnotation], ns) {
		s.named = append(s.named, hashing.Use{Kind: hashing.KindSecret, Name: name, All: true, Optional: true})
	}
	return s
}

func isTrue(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "true") }

// splitNames reads Reloader's list of names. An entry may be written
// namespace/name: a pod consumes only configs of its own namespace, so an
// entry naming another namespace is dropped (Reloader never matched it
// either) rather than read as the same name here.
func splitNames(s, ns string) map[string]bool {
	out := map[string]bool{}
	for item := range annotations.ParseList(s) {
		if i := strings.LastIndexByte(item, '/'); i >= 0 {
			if item[:i] != ns {
				continue
			}
			item = item[i+1:]
		}
		if item != "" {
			out[item] = true
		}
	}
	return out
}
