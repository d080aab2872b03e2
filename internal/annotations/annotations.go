// Package annotations is the annotation contract: the names confighash
// reads and writes, the prefix they sit under and its check, the
// confighash.dev/external list, and how a value in YAML reads as a string
// (Value, ReadsAsString, PlainSafe). The render-time tools and the
// controller share it.
package annotations

import (
	"fmt"
	"regexp"
)

// DefaultPrefix is the annotation prefix unless a user configures another.
const DefaultPrefix = "confighash.dev"

// Names written at render time (GitOps owns them; the controller only reads).
const (
	// Hash, on a pod template, holds the render-time hash of the in-stream
	// configs.
	Hash = "hash"
	// KeyID, on a pod template next to a keyed Hash, names the HMAC key it
	// was made with (hashing.KeyID), so that a controller holding another key
	// knows it cannot compare the hash.
	KeyID = "key-id"
	// External, on a workload, lists the configs it consumes from outside the
	// rendered stream, as Kind/name separated by commas.
	External = "external"
	// Enabled, on a workload: "false" opts it out of both sides, "true" opts it
	// in to the controller.
	Enabled = "enabled"
)

// Names only the controller writes; the render never emits them, so a GitOps
// tool sees no drift.
const (
	// ControllerHash, on a pod template, is the live hash of every consumed
	// config when the controller last rolled the workload.
	ControllerHash = "controller-hash"
	// ControllerBase, on a pod template, is the render-time hash in place when
	// the controller last rolled ("none" when there was none).
	ControllerBase = "controller-base"
	// ControllerKeyID, on a pod template in keyed mode, is the id of the HMAC
	// key ControllerHash was made with.
	ControllerKeyID = "controller-key-id"
	// ControllerUses, on a pod template, is the fingerprint of how the pod
	// spec consumed configs (which configs, which keys) when the controller
	// last rolled: ControllerHash is comparable only while it holds.
	ControllerUses = "controller-uses"
	// ExternalBaseline, on the workload's own metadata (so writing it does not
	// roll pods), records the content of each external config as the pods
	// last saw it.
	ExternalBaseline = "external-baseline"
	// RenderBaseline, on the workload's own metadata, records
	// "<render-time hash>=<live hash of the in-stream configs>": the pods
	// the render of that hash started read in-stream content the render does
	// not hold (a key another applier owns, a Secret the project fills at
	// run time), so the controller does not roll them again for it.
	RenderBaseline = "render-baseline"
)

// HelmHook is Helm's annotation that makes an object a hook, whatever its
// value; the value lists the events on which Helm creates it. Helm 3 keeps
// hooks from its post-renderer, and Helm 4 sends them all on every render.
const HelmHook = "helm.sh/hook"

// Key returns the full annotation key for name under prefix, or under
// DefaultPrefix when prefix is empty.
func Key(prefix, name string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + "/" + name
}

// maxPrefix is the longest DNS subdomain.
const maxPrefix = 253

// prefixPattern is a DNS subdomain (RFC 1123), the form of an annotation
// key's prefix.
var prefixPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// CheckPrefix reports whether prefix can be an annotation prefix: a DNS
// subdomain. The error quotes the prefix; the caller names the option.
func CheckPrefix(prefix string) error {
	if len(prefix) > maxPrefix || !prefixPattern.MatchString(prefix) {
		return fmt.Errorf("%q is not a DNS subdomain (like confighash.dev)", prefix)
	}
	return nil
}
