package controller

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/confighash/confighash/hashing"
)

// Event reasons on workloads.
const (
	EventReasonConfigChanged = "ConfigChanged"
	EventReasonConfigMissing = "ConfigMissing"
	// EventReasonPatchForbidden: the API server refused the controller's
	// patch of the workload (a Role that lost patch at run time).
	EventReasonPatchForbidden = "PatchForbidden"
	// EventReasonHMACKeyMismatch: the render-time hash was made with
	// another HMAC key than the controller's, or in the other mode.
	EventReasonHMACKeyMismatch = "HMACKeyMismatch"
	// EventReasonBaselineRemoved: another writer of the workload removed
	// the baseline the controller wrote on it, which the controller then
	// writes again at most once per --min-roll-interval.
	EventReasonBaselineRemoved = "BaselineRemoved"
	EventActionRollout         = "Rollout"
	EventActionWait            = "Wait"
)

// maxKeysInMessage bounds how many key names one Event lists per config.
const maxKeysInMessage = 8

// rollMessage explains a roll: the consumed keys that changed, per config,
// like "ConfigMap shop/app-config key LOG_LEVEL changed; rolling". Changes
// the workload does not consume are left out; without any recorded change
// (after a restart) it falls back to what the decision knows. It names keys,
// never values.
func rollMessage(changes []Change, uses []hashing.Use, d Decision, namespace string) string {
	byRef := map[string]hashing.Use{}
	for _, u := range uses {
		byRef[u.Ref()] = u
	}
	var parts []string
	seen := map[string]bool{}
	for i := len(changes) - 1; i >= 0; i-- { // newest first, one line per config
		c := changes[i]
		ref := string(c.Kind) + "/" + c.Name
		u, consumed := byRef[ref]
		if !consumed || seen[ref] {
			continue
		}
		part := describeChange(c, u)
		if part == "" {
			continue
		}
		seen[ref] = true
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		parts = append(parts, fallbackMessage(d, namespace))
	}
	return strings.Join(parts, "; ") + "; rolling"
}

func describeChange(c Change, u hashing.Use) string {
	obj := fmt.Sprintf("%s %s", c.Kind, hashing.ObjectName(c.Namespace, c.Name))
	switch c.Op {
	case OpCreated, OpDeleted:
		return obj + " " + string(c.Op)
	}
	keys := c.Keys
	if !u.All {
		keys = intersect(c.Keys, u.Keys)
	}
	switch len(keys) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("%s key %s changed", obj, keys[0])
	}
	shown := keys
	more := ""
	if len(shown) > maxKeysInMessage {
		more = fmt.Sprintf(" and %d more", len(shown)-maxKeysInMessage)
		shown = shown[:maxKeysInMessage]
	}
	return fmt.Sprintf("%s keys %s%s changed", obj, strings.Join(shown, ", "), more)
}

func fallbackMessage(d Decision, namespace string) string {
	switch {
	case len(d.Changed) > 0:
		names := make([]string, len(d.Changed))
		for i, ref := range d.Changed {
			kind, name, _ := strings.Cut(ref, "/")
			names[i] = kind + " " + hashing.ObjectName(namespace, name)
		}
		return strings.Join(names, ", ") + " changed"
	case d.Reason == ReasonRenderMismatch:
		return "consumed config differs from the render-time hash"
	default:
		return "consumed config changed since the last rollout"
	}
}

func missingMessage(missing []string, namespace string) string {
	names := make([]string, len(missing))
	for i, ref := range missing {
		kind, name, _ := strings.Cut(ref, "/")
		name, key, isKey := strings.Cut(name, " key ")
		names[i] = kind + " " + hashing.ObjectName(namespace, name)
		if isKey {
			names[i] += " key " + key
		}
	}
	return fmt.Sprintf("required %s missing; not rolling until it exists", strings.Join(names, ", "))
}

// missingRelated is the related object of a ConfigMissing Event: the first
// missing config, and the key of it when a key is what is missing. client-go
// takes an Event with the same regarding and related objects, reason and
// action as a repeat of the last one, and keeps that one's note; relating
// the Event to what is missing makes a new Event when that changes (a
// ConfigMap created without a key the pods need), so its note says it.
func missingRelated(missing []string, namespace string) runtime.Object {
	if len(missing) == 0 {
		return nil
	}
	kind, name, _ := strings.Cut(missing[0], "/")
	name, key, isKey := strings.Cut(name, " key ")
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: kind, Namespace: namespace, Name: name}
	if isKey {
		ref.FieldPath = "data[" + key + "]"
	}
	return ref
}

// intersect returns the elements of a that are in b (both sorted), in order.
func intersect(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, s := range b {
		in[s] = true
	}
	var out []string
	for _, s := range a {
		if in[s] {
			out = append(out, s)
		}
	}
	return out
}
