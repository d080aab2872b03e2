package rolldiff

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/output"
)

// Status of a workload in a diff.
type Status string

// The statuses Compare gives.
const (
	// StatusRolls: the workload is in both renders and its pods restart.
	StatusRolls Status = "rolls"
	// StatusUnchanged: in both renders, nothing its pods see changed.
	StatusUnchanged Status = "unchanged"
	// StatusNew and StatusRemoved: in one render only.
	StatusNew     Status = "new"
	StatusRemoved Status = "removed"
)

// Result is the outcome of comparing two renders.
type Result struct {
	// Summary is the one-line summary.
	Summary string `json:"summary"`
	// Total counts the workloads of both renders (each once); Rolling,
	// New and Removed those with that status.
	Total   int `json:"total"`
	Rolling int `json:"rolling"`
	New     int `json:"new"`
	Removed int `json:"removed"`
	// Workloads are every workload of both renders, sorted by namespace,
	// kind and name.
	Workloads []Workload `json:"workloads"`
}

// Changed reports whether any workload rolls, is new or is removed: pods
// start or stop.
func (r Result) Changed() bool { return r.Rolling+r.New+r.Removed > 0 }

// Workload is the diff of one workload.
type Workload struct {
	output.Ref
	Status Status `json:"status"`
	// OptedOut is true when the new render (or the old one, for a removed
	// workload) opts the workload out of confighash.
	OptedOut bool `json:"optedOut,omitempty"`
	// OldHash and NewHash are the confighash hashes of the consumed in-render
	// content, as confighash writes them; empty when nothing is hashed.
	OldHash string `json:"oldHash,omitempty"`
	NewHash string `json:"newHash,omitempty"`
	// Configs are the consumed configs whose consumed content changed, or
	// that joined or left the render.
	Configs []ConfigChange `json:"configs,omitempty"`
	// Template lists the pod template fields that changed, apart from
	// confighash's own annotations.
	Template []FieldChange `json:"template,omitempty"`
	// StaleHashes are hash annotations found in the inputs that do not match
	// the content they are next to.
	StaleHashes []StaleHash `json:"staleHashes,omitempty"`
	// Reasons are the causes in words, one per config or template change.
	Reasons []string `json:"reasons,omitempty"`
	// job is true for a Job: its pods run once, and the API server refuses
	// any change of its pod template.
	job bool
}

// Config change kinds.
const (
	// ChangeKeys: the config is in both renders and consumed keys differ.
	ChangeKeys = "keys"
	// ChangeLeft: the config was in the old render and is not in the new
	// one; the workload still consumes it (external from now on).
	ChangeLeft = "left-render"
	// ChangeJoined: the config was external and is now in the render.
	ChangeJoined = "joined-render"
	// ChangeRenamed: a kustomize-generated config got a new hash suffix;
	// Added/Removed/Changed tell which consumed keys caused it.
	ChangeRenamed = "renamed"
	// ChangeContent: the config is consumed in both renders but its content
	// could not be read key by key (not indexed under the name consumed).
	ChangeContent = "content"
)

// ConfigChange is what changed in one consumed ConfigMap or Secret.
type ConfigChange struct {
	output.Ref
	// OldName is the previous name of a renamed (hash-suffixed) config.
	OldName string `json:"oldName,omitempty"`
	Change  string `json:"change"`
	// Optional is true when every reference to the config is optional.
	Optional bool `json:"optional,omitempty"`
	// Added, Removed and Changed are consumed key names, sorted.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []string `json:"changed,omitempty"`
}

// FieldChange is one changed pod template field.
type FieldChange struct {
	// Path locates the field, like containers[web].image or
	// metadata.labels[app].
	Path string `json:"path"`
	// Field is the short name a summary uses: image, env, resources,
	// labels, volumes, serviceAccountName, ….
	Field string `json:"field"`
}

// StaleHash is a render-time hash annotation that does not match the
// content it covers.
type StaleHash struct {
	// Render is "old" or "new".
	Render string `json:"render"`
	// Found is the annotation; Computed what the content gives.
	Found    string `json:"found"`
	Computed string `json:"computed"`
	// Cause is hashing.MismatchKeyed, MismatchUnkeyed or MismatchOtherKey
	// when the hash was made in another mode than the diff's; empty
	// otherwise (the configs changed after the render, or it used another
	// --namespace, or the hash is no value of this version).
	Cause hashing.Mismatch `json:"cause,omitempty"`
	// keyID is the key id next to the hash, for MismatchOtherKey.
	keyID string
	// noNamespace: the workload names no namespace and the diff was given
	// none, so a render made with --namespace hashed another one.
	noNamespace bool
	// optedOut: the workload opts out, and confighash removes the hash of
	// an earlier run (inject.Workload.Holders).
	optedOut bool
}

// hint says what a stale hash's cause means for the user.
func (s StaleHash) hint() string {
	if s.optedOut {
		return "the workload opts out: confighash ran before the opt-out and not after it, which would remove the hash"
	}
	switch s.Cause {
	case hashing.MismatchKeyed:
		return "made with an HMAC key: pass it with --hmac-key-file"
	case hashing.MismatchUnkeyed:
		return "made without an HMAC key"
	case hashing.MismatchOtherKey:
		return "made with another HMAC key (key-id " + s.keyID + ")"
	}
	if s.noNamespace {
		return "the workload names no namespace: if the render was given --namespace (Helm's release namespace), give diff the same"
	}
	return ""
}

type workloadKey struct{ kind, namespace, name string }

// Compare diffs two renders read with the same options.
func Compare(old, cur *Render) Result {
	olds := map[workloadKey]inject.Workload{}
	for _, w := range old.report.Workloads {
		olds[keyOf(w)] = w
	}
	var res Result
	seen := map[workloadKey]bool{}
	for _, w := range cur.report.Workloads {
		k := keyOf(w)
		seen[k] = true
		ow, ok := olds[k]
		var d Workload
		if ok {
			d = compareWorkload(old, cur, ow, w)
		} else {
			d = Workload{Status: StatusNew, OptedOut: w.OptedOut, NewHash: w.Hash}
			d.StaleHashes = staleHashes(cur, w, "new")
		}
		d.Kind, d.Namespace, d.Name = w.Kind, w.Namespace, w.Name
		res.Workloads = append(res.Workloads, d)
	}
	for _, w := range old.report.Workloads {
		if k := keyOf(w); !seen[k] {
			seen[k] = true
			res.Workloads = append(res.Workloads, Workload{Ref: output.Ref{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name},
				Status: StatusRemoved, OptedOut: w.OptedOut, OldHash: w.Hash})
		}
	}
	slices.SortStableFunc(res.Workloads, func(a, b Workload) int { return a.Compare(b.Ref) })
	res.Total = len(res.Workloads)
	for _, w := range res.Workloads {
		switch w.Status {
		case StatusRolls:
			res.Rolling++
		case StatusNew:
			res.New++
		case StatusRemoved:
			res.Removed++
		}
	}
	res.Summary = summary(res)
	return res
}

func keyOf(w inject.Workload) workloadKey { return workloadKey{w.Kind, w.Namespace, w.Name} }

// compareWorkload diffs a workload present in both renders.
func compareWorkload(old, cur *Render, ow, w inject.Workload) Workload {
	d := Workload{OptedOut: w.OptedOut, OldHash: ow.Hash, NewHash: w.Hash,
		job: w.TemplateImmutable()}
	d.StaleHashes = append(staleHashes(old, ow, "old"), staleHashes(cur, w, "new")...)
	renames := map[string]string{}
	if ow.Hash != w.Hash {
		d.Configs, renames = configChanges(old, cur, ow, w)
	}
	names := map[string]string{}
	for newRef, oldRef := range renames {
		names[newRef[strings.IndexByte(newRef, '/')+1:]] = oldRef[strings.IndexByte(oldRef, '/')+1:]
	}
	d.Template = templateChanges(templateOf(old, ow), templateOf(cur, w), old.opts.Annotation(""), names)
	for _, c := range d.Configs {
		d.Reasons = append(d.Reasons, c.reason())
	}
	if len(d.Template) > 0 {
		d.Reasons = append(d.Reasons, templateReason(d.Template))
	}
	if ow.Hash != w.Hash && len(d.Reasons) == 0 {
		// The hash covers something neither diff names (a use's kind or
		// optional flag): say so rather than nothing.
		d.Reasons = append(d.Reasons, "the consumed config content changed")
	}
	d.Status = StatusUnchanged
	if ow.Hash != w.Hash || len(d.Template) > 0 {
		d.Status = StatusRolls
	}
	return d
}

// staleHashes reports the render-time hash annotation of w when present
// and different from what its content gives.
func staleHashes(r *Render, w inject.Workload, side string) []StaleHash {
	holder, _ := w.Holders(r.opts)
	if holder == nil {
		return nil
	}
	found, ok := inject.Annotation(holder.YNode(), r.opts.Annotation(inject.HashName))
	if !ok || found == w.Hash {
		return nil
	}
	s := StaleHash{Render: side, Found: found, Computed: w.Hash, noNamespace: w.Namespace == "", optedOut: w.OptedOut}
	if w.OptedOut {
		return []StaleHash{s}
	}
	var keyID string
	if len(r.opts.Key) > 0 {
		keyID = hashing.KeyID(r.opts.Key)
	}
	renderKeyID, _ := inject.Annotation(holder.YNode(), r.opts.Annotation(inject.KeyIDName))
	if s.Cause = hashing.CompareMode(found, renderKeyID, keyID); s.Cause == hashing.MismatchUnknown {
		s.Cause = ""
	}
	if s.Cause == hashing.MismatchOtherKey {
		s.keyID = renderKeyID
	}
	return []StaleHash{s}
}

// configChanges lists the consumed configs whose consumed content differs.
// It returns too the kustomize renames it paired of a config in either
// render, new name to old name, so the template diff does not count the
// renamed reference as another cause.
func configChanges(old, cur *Render, ow, w inject.Workload) ([]ConfigChange, map[string]string) {
	oldUses, newUses := usesByRef(ow), usesByRef(w)
	renames := pairRenames(oldUses, newUses)
	var out []ConfigChange
	renamedFrom := map[string]bool{}
	for _, oldRef := range renames {
		renamedFrom[oldRef] = true
	}
	for _, ref := range unionKeys(oldUses, newUses) {
		nu, inNew := newUses[ref]
		ou, inOld := oldUses[ref]
		if renamedFrom[ref] && !inNew {
			continue // reported under its new name
		}
		oldRef := ref
		if prev, ok := renames[ref]; ok {
			oldRef, ou, inOld = prev, oldUses[prev], true
		}
		c := ConfigChange{Ref: output.Ref{Kind: string(nu.Kind), Namespace: w.Namespace, Name: nu.Name}, Change: ChangeKeys, Optional: nu.Optional}
		switch {
		case !inOld || !inNew:
			// A reference added or removed: the template diff names it;
			// its content is new to the hash or gone from it.
			continue
		case ou.external && nu.external:
			// Outside both renders, nothing says the two names are one
			// config: the template diff names the reference that changed.
			delete(renames, ref)
			continue
		case !ou.external && nu.external:
			c.Change = ChangeLeft
			out = append(out, c)
			continue
		case ou.external && !nu.external:
			c.Change = ChangeJoined
			out = append(out, c)
			continue
		}
		oc, okOld := old.configs[configRef{ou.Kind, ow.Namespace, ou.Name}]
		nc, okNew := cur.configs[configRef{nu.Kind, w.Namespace, nu.Name}]
		if oldRef != ref {
			c.Change, c.OldName = ChangeRenamed, ou.Name
		}
		if !okOld || !okNew {
			c.Change = ChangeContent
			out = append(out, c)
			continue
		}
		c.Added, c.Removed, c.Changed = keyDiff(consumedKeys(ou.Use, oc, nu.Use, nc), oc, nc)
		if len(c.Added)+len(c.Removed)+len(c.Changed) > 0 || c.Change == ChangeRenamed {
			out = append(out, c)
		}
	}
	return out, renames
}

type use struct {
	hashing.Use
	external bool
}

func usesByRef(w inject.Workload) map[string]use {
	out := map[string]use{}
	for _, u := range w.InStream {
		out[u.Ref()] = use{Use: u}
	}
	for _, u := range w.External {
		out[u.Ref()] = use{Use: u, external: true}
	}
	return out
}

// consumedKeys is the union of the keys the two uses read: every key of
// both contents when either reads the whole object.
func consumedKeys(ou hashing.Use, oc hashing.Content, nu hashing.Use, nc hashing.Content) []string {
	set := map[string]bool{}
	for _, side := range []struct {
		u hashing.Use
		c hashing.Content
	}{{ou, oc}, {nu, nc}} {
		if side.u.All {
			for k := range oc.Keys {
				set[k] = true
			}
			for k := range nc.Keys {
				set[k] = true
			}
			continue
		}
		for _, k := range side.u.Keys {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// keyDiff sorts keys into added, removed and changed between two contents.
func keyDiff(keys []string, oc, nc hashing.Content) (added, removed, changed []string) {
	for _, k := range keys {
		od, inOld := oc.Keys[k]
		nd, inNew := nc.Keys[k]
		switch {
		case inOld && inNew && od != nd:
			changed = append(changed, k)
		case inNew && !inOld:
			added = append(added, k)
		case inOld && !inNew:
			removed = append(removed, k)
		}
	}
	return added, removed, changed
}

// pairRenames matches configs consumed only in the old render with ones
// consumed only in the new one whose names differ only by kustomize's hash
// suffix (name-<10 characters>), new ref to old ref.
func pairRenames(oldUses, newUses map[string]use) map[string]string {
	out := map[string]string{}
	byBase := map[string]string{}
	for ref, u := range oldUses {
		if _, both := newUses[ref]; both {
			continue
		}
		if base, ok := suffixBase(u.Name); ok {
			byBase[string(u.Kind)+"/"+base] = ref
		}
	}
	for ref, u := range newUses {
		if _, both := oldUses[ref]; both {
			continue
		}
		if base, ok := suffixBase(u.Name); ok {
			if prev, ok := byBase[string(u.Kind)+"/"+base]; ok {
				out[ref] = prev
			}
		}
	}
	return out
}

// suffixBase strips a kustomize name hash suffix: a dash and ten characters
// of kustomize's alphabet.
func suffixBase(name string) (string, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || len(name)-i-1 != 10 {
		return "", false
	}
	for _, r := range name[i+1:] {
		if !strings.ContainsRune("bcdfghkmt2456789", r) {
			return "", false
		}
	}
	return name[:i], true
}

// ReasonKeys is how many keys of a group (changed, added, removed) a reason
// names; it says how many more there are. The JSON lists every one.
const ReasonKeys = 10

// reason says what changed in words, names only.
func (c ConfigChange) reason() string {
	obj := c.Kind + " " + hashing.ObjectName(c.Namespace, c.Name)
	switch c.Change {
	case ChangeLeft:
		if c.Optional {
			return obj + " left the render (optional; the controller watches it)"
		}
		return obj + " left the render (external now: it must exist in the cluster)"
	case ChangeJoined:
		return obj + " joined the render (was external)"
	case ChangeContent:
		return obj + " may have changed (its content is not readable key by key here)"
	}
	if c.Change == ChangeRenamed {
		obj = c.Kind + " " + hashing.ObjectName(c.Namespace, c.OldName) + " renamed to " + c.Name + ":"
	}
	if len(c.Added)+len(c.Removed)+len(c.Changed) == 0 {
		return obj + " no consumed key changed"
	}
	var parts []string
	for _, g := range []struct {
		keys []string
		verb string
	}{{c.Changed, "changed"}, {c.Added, "added"}, {c.Removed, "removed"}} {
		switch n := len(g.keys); {
		case n == 0:
		case n == 1:
			parts = append(parts, "key "+g.keys[0]+" "+g.verb)
		case n > ReasonKeys:
			parts = append(parts, fmt.Sprintf("keys %s and %d more %s", strings.Join(g.keys[:ReasonKeys], ", "), n-ReasonKeys, g.verb))
		default:
			parts = append(parts, "keys "+strings.Join(g.keys, ", ")+" "+g.verb)
		}
	}
	return obj + " " + strings.Join(parts, "; ")
}
