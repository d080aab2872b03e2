package controller

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/confighash/confighash/hashing"
)

// NoRenderHash is recorded as the controller base when the pod template
// carried no render-time hash at the last roll.
const NoRenderHash = "none"

// Action is what the controller should do about one workload.
type Action string

// The actions Decide returns.
const (
	// ActionNone: the pods reflect the live content of what they consume.
	ActionNone Action = "none"
	// ActionRecordBaseline: write the baselines (external, and the render
	// baseline) on the workload's metadata (pods are not rolled).
	ActionRecordBaseline Action = "record-baseline"
	// ActionRoll: patch the pod template so the workload's own controller rolls
	// it, and record the new state.
	ActionRoll Action = "roll"
	// ActionBlocked: a required config is missing; do nothing and warn.
	ActionBlocked Action = "blocked"
)

// Reason says why Decide chose its action.
type Reason string

// The reasons Decide gives.
const (
	ReasonInSync           Reason = "in-sync"
	ReasonNewExternal      Reason = "new-external-config"
	ReasonMissing          Reason = "missing-config"
	ReasonRenderMismatch   Reason = "render-hash-mismatch"
	ReasonExternalChanged  Reason = "external-config-changed"
	ReasonChangedSinceRoll Reason = "changed-since-last-roll"
	// ReasonRenderStarted: a new render rolled the pods after the live
	// content last changed; they read it, though the render does not hold
	// all of it, or an external config changed since its baseline.
	// Recorded (RenderBaseline, the external baseline), not rolled again.
	ReasonRenderStarted Reason = "render-started-on-live-content"
)

// Input is everything Decide needs, read from the workload and the cache.
type Input struct {
	// RenderHash is the render-time hash the controller can compare with:
	// empty when the pod template carries none or one of an unknown version
	// or mode, in which case every use counts as external.
	RenderHash string
	// RawRenderHash is the render-time annotation as found, empty when absent.
	RawRenderHash string
	// ControllerHash and ControllerBase are the controller's own record on the
	// pod template; empty when absent.
	ControllerHash string
	ControllerBase string
	// Baseline is the recorded content of each external config, by Kind/name;
	// nil when the workload carries none.
	Baseline map[string]string
	// LiveIn is the live hash of the in-stream uses, LiveAll of every use.
	LiveIn  string
	LiveAll string
	// LiveInUnnamespaced is the live hash of the in-stream uses computed
	// as a render of manifests that name no namespace computes it (with an
	// empty namespace, when not told one: kubectl apply -n, helm install -n
	// put them in one later). The pods consume configs of their own
	// namespace only, so a render hash equal to it describes the live
	// content as much as one equal to LiveIn. Empty when not computed
	// (LiveIn equals the render hash).
	LiveInUnnamespaced string
	// LiveExternal is the live hash of each external use, by Kind/name.
	LiveExternal map[string]string
	// FirstSeen is, for external configs this process saw change before it
	// recorded their baseline, the hash as first observed, by Kind/name. It
	// stands in for a missing baseline: the pods run what was first seen, so
	// an edit made during start-up rolls instead of being absorbed.
	FirstSeen map[string]string
	// Landed holds, by Kind/name, the hash an optional external config has
	// when absent, for those created together with the workload or with a
	// config its pods require (the one created within a second of the
	// other, or before it): a baseline or first-seen hash that says the
	// config was absent describes no content the pods ran on, as they could
	// not have started long before it landed. Such a change is recorded,
	// not rolled: kubectl apply on a folder whose deployment.yaml sorts
	// before secret.yaml, a render that lists the Deployment first.
	Landed map[string]string
	// Missing lists the required (non-optional) configs that do not exist,
	// as Kind/name, and the required keys their configs lack, as
	// "Kind/name key k".
	Missing []string
	// KeyID is the controller's HMAC key id (empty without a key);
	// ControllerKeyID and BaselineKeyID the key ids its records were made
	// under. A record made under another key is unknown, never "changed":
	// rotating the key must not roll every workload the controller touched.
	KeyID           string
	ControllerKeyID string
	BaselineKeyID   string
	// Uses is the fingerprint of how the pod spec consumes configs now
	// (UsesPrint); ControllerUses and BaselineUses the fingerprints the
	// records were made under, empty when a record carries none (made
	// before fingerprints were recorded: compared as it is). A record made
	// under another fingerprint describes another pod spec, whose change
	// rolled the pods onto the live content: it is unknown, never
	// "changed", and is made again without a roll.
	Uses           string
	ControllerUses string
	BaselineUses   string
	// RenderBaseline is the live in-stream hash recorded for the pods of
	// RawRenderHash (View.RenderBaseline), empty when none is.
	RenderBaseline string
	// FirstSeenRender is the live in-stream hash of a render baseline of
	// RawRenderHash that another writer of the workload removed, the pod
	// template left as it was: the pods still read what it names, so it
	// stands in for RenderBaseline until it is written again. Empty when
	// there is none.
	FirstSeenRender string
	// RenderStarted reports that this process saw the pod template take
	// its render-time hash (a new one, or the same one with a pod spec
	// that consumes other configs or keys) after it last saw a consumed
	// config change (one seen while a config the pods require was missing
	// does not count: no pod of the template had started): the pods that
	// template started read the live content, render or not.
	RenderStarted bool
}

// Record is the state the controller writes.
type Record struct {
	// ControllerHash and ControllerBase go on the pod template (a roll).
	ControllerHash string
	ControllerBase string
	// Baseline goes on the workload metadata; empty means remove it.
	Baseline string
	// KeyID goes on the pod template with ControllerHash (a roll); the
	// baseline carries it too.
	KeyID string
	// Uses is the fingerprint of the pod spec's uses, on the pod template
	// with ControllerHash (a roll); the baseline carries it too.
	Uses string
	// RenderBaseline goes on the workload metadata
	// (FormatRenderBaseline); empty means remove it.
	RenderBaseline string
}

// Decision is the outcome of Decide.
type Decision struct {
	Action Action
	Reason Reason
	// Record is what to write for ActionRoll (all fields) and
	// ActionRecordBaseline (Baseline and RenderBaseline only).
	Record Record
	// Changed names the external configs whose content differs from the
	// baseline; Missing the required configs that do not exist and the
	// required keys that their configs lack.
	Changed []string
	Missing []string
}

// Decide chooses what to do about one workload. It is pure: the same input
// always gives the same decision.
//
//  1. A required config is missing: blocked (a rollout would start pods that
//     cannot run).
//  2. The controller rolled last, the render-time hash is the one it saw
//     then and the pod spec consumes what it did then: the pods reflect
//     ControllerHash, so roll iff LiveAll differs.
//  3. Otherwise the pods reflect the render: roll iff the in-stream content
//     differs from the render-time hash (hashed in the workload's namespace,
//     or in none for a render that named none) and from the render baseline,
//     or an external config differs from its baseline. External configs
//     without a comparable baseline (none, another key, another pod spec's
//     uses) get one, without a roll; so do in-stream content that differs
//     from the render and external configs that differ from their baseline
//     when the render's template rolled the pods after that content last
//     changed (RenderStarted), and optional external configs recorded as
//     absent that landed together with the pods (Landed): the pods read
//     them.
func Decide(in Input) Decision {
	if len(in.Missing) > 0 {
		missing := append([]string(nil), in.Missing...)
		sort.Strings(missing)
		return Decision{Action: ActionBlocked, Reason: ReasonMissing, Missing: missing}
	}
	roll := Record{
		ControllerHash: in.LiveAll,
		ControllerBase: baseOf(in.RawRenderHash),
		Baseline:       FormatBaseline(in.LiveExternal, in.KeyID, in.Uses),
		KeyID:          in.KeyID,
		Uses:           in.Uses,
	}
	// A record in another mode (plain vs keyed), made under another key or
	// for another pod spec's uses, is unknown, never "changed": switching
	// modes or rotating the key must not roll every workload, and a change
	// of pod spec rolled the pods by itself.
	controllerHash := sameMode(in.ControllerHash, in.LiveAll)
	if in.ControllerKeyID != in.KeyID || !sameUses(in.ControllerUses, in.Uses) {
		controllerHash = ""
	}
	if controllerHash != "" && in.ControllerBase == baseOf(in.RawRenderHash) {
		if in.LiveAll == controllerHash {
			return Decision{Action: ActionNone, Reason: ReasonInSync}
		}
		return Decision{Action: ActionRoll, Reason: ReasonChangedSinceRoll, Record: roll}
	}
	baseline := in.Baseline
	if !in.BaselineComparable() {
		baseline = nil
	}
	// A config this process saw change before its baseline was written is
	// compared with its first observed content, and still gets its
	// baseline written.
	_, unrecorded := compareBaseline(baseline, in.LiveExternal)
	// The first observed hashes win over a recorded entry: this process
	// remembers one only where there was no baseline when the config
	// changed, or where the baseline written since already held the changed
	// content (it absorbed the edit).
	recorded := merged(baseline, in.FirstSeen)
	changed, _ := compareBaseline(recorded, in.LiveExternal)
	// A config recorded as absent that landed with the pods they read.
	landed := false
	changed = slices.DeleteFunc(changed, func(ref string) bool {
		h, ok := in.Landed[ref]
		drop := ok && recorded[ref] == h
		landed = landed || drop
		return drop
	})
	if len(changed) == 0 {
		changed = nil
	}
	// A render baseline says what the render's pods read: the in-stream
	// content is then fine only as it was recorded, not as the render holds
	// it (the content the render does not hold taken back is an edit).
	// One another writer removed stands until it is written again.
	inStreamFine := in.LiveIn == in.RenderHash || in.LiveInUnnamespaced == in.RenderHash
	renderBaseline, removed := in.RenderBaseline, false
	if renderBaseline == "" && in.FirstSeenRender != "" && in.RenderHash != "" {
		renderBaseline, removed = in.FirstSeenRender, true
	}
	if renderBaseline != "" {
		inStreamFine = in.LiveIn == renderBaseline
	}
	renderStarted := false
	if in.RenderHash != "" && !inStreamFine {
		if !in.RenderStarted {
			return Decision{Action: ActionRoll, Reason: ReasonRenderMismatch, Record: roll, Changed: changed}
		}
		renderStarted = true
	}
	// The pod template took the render-time hash after every consumed
	// config change this process saw: its pods read the external configs
	// as they are too (a Secret rotated a moment before a render lands).
	if len(changed) > 0 && !in.RenderStarted {
		return Decision{Action: ActionRoll, Reason: ReasonExternalChanged, Record: roll, Changed: changed}
	}
	switch {
	case renderStarted:
		return Decision{Action: ActionRecordBaseline, Reason: ReasonRenderStarted, Changed: changed,
			Record: Record{Baseline: roll.Baseline, RenderBaseline: FormatRenderBaseline(in.RawRenderHash, in.LiveIn)}}
	case len(changed) > 0 || unrecorded || removed || landed:
		// The external baselines written, the render baseline kept (or
		// written again): changed ones the render's pods read
		// (RenderStarted), or ones not recorded.
		rec := Record{Baseline: roll.Baseline}
		if renderBaseline != "" {
			rec.RenderBaseline = FormatRenderBaseline(in.RawRenderHash, renderBaseline)
		}
		reason := ReasonNewExternal
		if len(changed) > 0 || (removed && !unrecorded) {
			reason = ReasonRenderStarted
		}
		return Decision{Action: ActionRecordBaseline, Reason: reason, Changed: changed, Record: rec}
	}
	return Decision{Action: ActionNone, Reason: ReasonInSync}
}

// Landed is Input.Landed of a workload in namespace ns, seen as v, created
// at workload, whose consumed configs that exist were created at configs
// (by Kind/name); key is the HMAC key, nil for plain hashes. An optional
// external config landed together with the pods when the workload or a
// config the pods require was created after it, or at most a second before
// it (the API server keeps creation times to the second): pods that needed
// the other cannot have run without it for longer than that, and kubectl
// apply on a folder, Helm, Argo CD and Flux write a render's objects within
// it, each in an order of its own. A creation time unknown (zero) counts
// as not together.
func Landed(ns string, v View, workload time.Time, configs map[string]time.Time, key []byte) map[string]string {
	startable := []time.Time{workload}
	for _, u := range v.Uses {
		if !u.Optional {
			startable = append(startable, configs[u.Ref()])
		}
	}
	together := func(created time.Time) bool {
		return !created.IsZero() && slices.ContainsFunc(startable, func(other time.Time) bool {
			return !other.IsZero() && !other.Before(created.Add(-time.Second))
		})
	}
	absent := func(hashing.Kind, string) (hashing.Content, bool) { return hashing.Content{}, false }
	var out map[string]string
	for _, u := range v.Uses {
		if !u.Optional || !v.External[u.Ref()] || !together(configs[u.Ref()]) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[u.Ref()] = hashing.Compute(ns, []hashing.Use{u}, absent, hashing.Options{Key: key})
	}
	return out
}

// BaselineComparable reports whether the recorded baseline can be
// compared with the live hashes: made under the controller's key id (or
// none) and the pod spec's uses as they are now.
func (in Input) BaselineComparable() bool {
	return in.BaselineKeyID == in.KeyID && sameUses(in.BaselineUses, in.Uses)
}

// sameUses reports whether a record made under the uses fingerprint
// recorded describes the pod spec of fingerprint current; a record without
// one (made before they were recorded) is taken to.
func sameUses(recorded, current string) bool {
	return recorded == "" || recorded == current
}

// baseOf is the controller-base value for a render-time annotation.
func baseOf(raw string) string {
	if raw == "" {
		return NoRenderHash
	}
	return raw
}

// sameMode returns value when it is a hash of the same mode (the part up to
// the colon, like "v1-sha256:") as reference, and "" otherwise.
func sameMode(value, reference string) string {
	i, j := strings.IndexByte(value, ':'), strings.IndexByte(reference, ':')
	if i < 0 || j < 0 || value[:i] != reference[:j] {
		return ""
	}
	return value
}

// compareBaseline lists the external configs whose live hash differs from
// the recorded one, and reports whether some have no record yet (or one in
// another mode).
func compareBaseline(baseline, live map[string]string) (changed []string, unrecorded bool) {
	for ref, h := range live {
		recorded, ok := baseline[ref]
		if ok && sameMode(recorded, h) == "" {
			ok = false
		}
		switch {
		case !ok:
			unrecorded = true
		case recorded != h:
			changed = append(changed, ref)
		}
	}
	sort.Strings(changed)
	return changed, unrecorded
}

// baselineKeyID and baselineUses are the entries of the external-baseline
// annotation that name the HMAC key its hashes were made with and the
// fingerprint of the pod spec's uses (UsesPrint) they were made under.
const (
	baselineKeyID = "key-id"
	baselineUses  = "uses"
)

// FormatBaseline renders per-config hashes as the external-baseline
// annotation: Kind/name=hash pairs sorted by Kind/name, joined by commas,
// after a key-id=<id> entry in keyed mode and a uses=<fingerprint> entry
// when uses is not empty. No hashes, no annotation.
func FormatBaseline(m map[string]string, keyID, uses string) string {
	if len(m) == 0 {
		return ""
	}
	refs := make([]string, 0, len(m))
	for ref := range m {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	var b strings.Builder
	if keyID != "" {
		b.WriteString(baselineKeyID + "=" + keyID)
	}
	if uses != "" {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(baselineUses + "=" + uses)
	}
	for _, ref := range refs {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ref)
		b.WriteByte('=')
		b.WriteString(m[ref])
	}
	return b.String()
}

// ParseBaseline reads the external-baseline annotation, the key id and
// the uses fingerprint it was made under (empty when it names none). It
// returns nil hashes for an absent or malformed value, so the controller
// records a fresh baseline instead of trusting a damaged one.
func ParseBaseline(s string) (hashes map[string]string, keyID, uses string) {
	if s == "" {
		return nil, "", ""
	}
	out := map[string]string{}
	for i, pair := range strings.Split(s, ",") {
		ref, h, ok := strings.Cut(pair, "=")
		switch {
		case i == 0 && ok && ref == baselineKeyID && h != "":
			keyID = h
			continue
		case i <= 1 && len(out) == 0 && uses == "" && ok && ref == baselineUses && h != "":
			uses = h
			continue
		}
		if !ok || ref == "" || h == "" || !strings.Contains(ref, "/") {
			return nil, "", ""
		}
		out[ref] = h
	}
	if len(out) == 0 {
		return nil, "", ""
	}
	return out, keyID, uses
}

// Wait is how long a roll must still wait: the mismatch must have persisted
// for window since firstSeen (edits that arrive together coalesce into one
// roll), and minInterval must have passed since the last roll (a config
// rewritten in a loop cannot roll a workload more often). Zero means roll now.
func Wait(now, firstSeen, lastRoll time.Time, window, minInterval time.Duration) (time.Duration, Reason) {
	wait, why := time.Duration(0), Reason("")
	if d := firstSeen.Add(window).Sub(now); d > wait {
		wait, why = d, "coalescing"
	}
	if !lastRoll.IsZero() {
		if d := lastRoll.Add(minInterval).Sub(now); d > wait {
			wait, why = d, "min-roll-interval"
		}
	}
	return wait, why
}
