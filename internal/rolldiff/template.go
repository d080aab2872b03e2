package rolldiff

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/yaml11"
	"github.com/confighash/confighash/internal/yamlnode"
)

// templateOf returns the workload's pod template as plain values; also for
// an opted-out workload, whose template inject does not keep.
func templateOf(r *Render, w inject.Workload) map[string]any {
	t := w.Template
	if t == nil && w.Node != nil {
		path := []string{"spec", "template"}
		if w.Kind == "CronJob" {
			path = []string{"spec", "jobTemplate", "spec", "template"}
		}
		for _, k := range r.opts.Workloads {
			if k.Kind == w.Kind && (k.Group == "" || strings.HasPrefix(w.APIVersion, k.Group+"/")) {
				path = strings.Split(k.Path, "/")
			}
		}
		if n := yamlnode.Path(w.Node.YNode(), path...); n != nil && n.Kind == yaml.MappingNode {
			t = yaml.NewRNode(n)
		}
	}
	if t == nil {
		return nil
	}
	m, _ := valueOf(t.YNode()).(map[string]any)
	return m
}

// valueOf returns a node as plain values, read as kubectl and Helm read it
// (sigs.k8s.io/yaml, YAML 1.1): a plain yes, on, y (and their negations) is
// a boolean, as kustomize, which reads YAML 1.2, writes it through. The
// analysis has expanded anchors, aliases and merge keys already.
func valueOf(n *yaml.Node) any {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return valueOf(n.Content[0])
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil
		}
		return valueOf(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = valueOf(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, it := range n.Content {
			l[i] = valueOf(it)
		}
		return l
	}
	if n.Style&yaml.TaggedStyle == 0 && yaml11.Scalar(n) == yaml11.Bool {
		if b, ok := yaml11.BoolValue(n.Value); ok {
			return b
		}
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return n.Value
	}
	return v
}

// templateChanges lists the fields that differ between two pod templates.
// An annotation under confighash's prefix (annPrefix ends with a slash)
// counts only when it is in one template and not the other (confighash
// added to or taken out of the pipeline, keyed mode turned on or off): a
// new value of one is the config change the config diff tells. renames
// maps config names of the new template to the old names they replace
// (kustomize hash suffixes): such a reference alone is not a template
// change, the config diff tells it.
func templateChanges(old, cur map[string]any, annPrefix string, renames map[string]string) []FieldChange {
	out := ownAddedOrRemoved(old, cur, annPrefix)
	old, cur = asStored(withoutOwn(old, annPrefix)), asStored(withoutOwn(cur, annPrefix))
	if len(renames) > 0 {
		cur, _ = rename(cur, renames).(map[string]any)
	}
	for _, k := range changedKeys(old, cur) {
		o, n := old[k], cur[k]
		switch k {
		case "metadata":
			out = append(out, metadataChanges(asMap(o), asMap(n))...)
		case "spec":
			out = append(out, specChanges(asMap(o), asMap(n))...)
		default:
			out = append(out, FieldChange{Path: k, Field: k})
		}
	}
	return out
}

func metadataChanges(old, cur map[string]any) []FieldChange {
	var out []FieldChange
	for _, k := range changedKeys(old, cur) {
		o, n := old[k], cur[k]
		if k == "labels" || k == "annotations" {
			for _, key := range changedKeys(asMap(o), asMap(n)) {
				out = append(out, FieldChange{Path: "metadata." + k + "[" + key + "]", Field: k})
			}
			continue
		}
		out = append(out, FieldChange{Path: "metadata." + k, Field: "metadata." + k})
	}
	return out
}

// specChanges compares pod specs: containers and volumes by name, the
// other fields whole.
func specChanges(old, cur map[string]any) []FieldChange {
	var out []FieldChange
	for _, k := range changedKeys(old, cur) {
		o, n := old[k], cur[k]
		switch k {
		case "containers", "initContainers", "ephemeralContainers":
			out = append(out, namedListChanges(k, o, n, true)...)
		case "volumes":
			out = append(out, namedListChanges(k, o, n, false)...)
		default:
			out = append(out, FieldChange{Path: k, Field: k})
		}
	}
	return out
}

// namedListChanges compares two lists of objects keyed by name. For
// containers it names each changed field; for other lists the item. Items
// of both lists in another order are a change of the list ("volumes
// (order)").
func namedListChanges(list string, old, cur any, fields bool) []FieldChange {
	om, nm, okOld, okNew := byName(old), byName(cur), true, true
	if om == nil && old != nil {
		okOld = false
	}
	if nm == nil && cur != nil {
		okNew = false
	}
	if !okOld || !okNew {
		return []FieldChange{{Path: list, Field: list}}
	}
	var out []FieldChange
	for _, name := range unionKeys(om, nm) {
		o, inOld := om[name]
		n, inNew := nm[name]
		item := fmt.Sprintf("%s[%s]", list, name)
		switch {
		case inOld && inNew && reflect.DeepEqual(o, n):
		case !inOld || !inNew || !fields:
			out = append(out, FieldChange{Path: item, Field: list})
		default:
			for _, f := range changedKeys(asMap(o), asMap(n)) {
				out = append(out, FieldChange{Path: item + "." + f, Field: f})
			}
		}
	}
	if !slices.Equal(commonOrder(old, nm), commonOrder(cur, om)) {
		// The API server keeps the order, and the Deployment controller
		// compares templates in it: the same items in another order are
		// another pod template.
		out = append(out, FieldChange{Path: list + " (order)", Field: list})
	}
	return out
}

// commonOrder lists the names of a list of named objects, in its order,
// that other holds too.
func commonOrder(list any, other map[string]any) []string {
	items, _ := list.([]any)
	var out []string
	for _, it := range items {
		name, _ := asMap(it)["name"].(string)
		if _, ok := other[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// byName indexes a list of objects by their name field; nil when it is not
// such a list (or names repeat).
func byName(v any) map[string]any {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make(map[string]any, len(list))
	for _, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			return nil
		}
		name, _ := m["name"].(string)
		if _, dup := out[name]; dup {
			return nil
		}
		out[name] = it
	}
	return out
}

// ownAddedOrRemoved lists the annotations under annPrefix that one pod
// template has and the other has not.
func ownAddedOrRemoved(old, cur map[string]any, annPrefix string) []FieldChange {
	oldAnn, curAnn := asMap(asMap(old["metadata"])["annotations"]), asMap(asMap(cur["metadata"])["annotations"])
	var out []FieldChange
	for _, k := range unionKeys(oldAnn, curAnn) {
		_, inOld := oldAnn[k]
		_, inCur := curAnn[k]
		if strings.HasPrefix(k, annPrefix) && inOld != inCur {
			out = append(out, FieldChange{Path: "metadata.annotations[" + k + "]", Field: "annotations"})
		}
	}
	return out
}

// withoutOwn returns the template without confighash's annotations (an
// empty annotations map dropped too), so they never count as a change.
func withoutOwn(t map[string]any, annPrefix string) map[string]any {
	meta := asMap(t["metadata"])
	ann := asMap(meta["annotations"])
	if len(ann) == 0 {
		return t
	}
	kept := map[string]any{}
	for k, v := range ann {
		if !strings.HasPrefix(k, annPrefix) {
			kept[k] = v
		}
	}
	return withField(t, "metadata", withField(meta, "annotations", kept))
}

// withField returns a copy of m (not nil) with key set to v, or without
// key when v is empty.
func withField(m map[string]any, key string, v map[string]any) map[string]any {
	out := maps.Clone(m)
	if len(v) == 0 {
		delete(out, key)
	} else {
		out[key] = v
	}
	return out
}

// asStored returns a pod template as the API server stores it, as far as a
// diff can tell it apart: read into its Go type (typed), so zero values of
// fields that are no pointer are none; an empty list is no list (a Go
// slice, which storage gives back as nil and apimachinery's semantic
// equality takes for nil), nor is an empty map of a map field
// (nodeSelector: {}, requests: {}); a container's resources: {} is none (a
// struct, not a pointer); the fields the API server defaults are filled in.
// A render that stops writing them rolls nothing.
func asStored(t map[string]any) map[string]any {
	out, _ := withoutEmpty(typed(t)).(map[string]any)
	spec := asMap(out["spec"])
	if spec == nil {
		return out
	}
	spec = maps.Clone(spec)
	for _, list := range []string{"containers", "initContainers", "ephemeralContainers"} {
		items, ok := spec[list].([]any)
		if !ok {
			continue
		}
		spec[list] = mapItems(items, func(c map[string]any) map[string]any {
			c = withHandlerDefaults(withDefaults(c, containerDefaults(c)))
			if r, ok := c["resources"].(map[string]any); ok {
				c["resources"] = canonicalResources(r)
				if len(r) == 0 {
					delete(c, "resources")
				}
			}
			return c
		})
	}
	spec = withDefaults(spec, podDefaults)
	// serviceAccount is the old name of serviceAccountName: the API server
	// stores the one that is set under both.
	if sa, _ := spec["serviceAccountName"].(string); sa == "" {
		if old, _ := spec["serviceAccount"].(string); old != "" {
			spec["serviceAccountName"] = old
		}
	}
	if sa, _ := spec["serviceAccountName"].(string); sa != "" && spec["serviceAccount"] == nil {
		spec["serviceAccount"] = sa
	}
	if r, ok := spec["resources"].(map[string]any); ok {
		spec["resources"] = canonicalResources(r)
	}
	if o, ok := spec["overhead"].(map[string]any); ok {
		spec["overhead"] = canonicalQuantities(o)
	}
	if vols, ok := spec["volumes"].([]any); ok {
		spec["volumes"] = mapItems(vols, func(vol map[string]any) map[string]any {
			if ed := asMap(vol["emptyDir"]); ed != nil && ed["sizeLimit"] != nil {
				vol = withField(vol, "emptyDir", canonicalQuantities(ed, "sizeLimit"))
			}
			for _, source := range []string{"configMap", "secret", "projected", "downwardAPI"} {
				if src, ok := vol[source].(map[string]any); ok {
					vol = maps.Clone(vol)
					vol[source] = withVolumeDefaults(source, withDefaults(src, map[string]any{"defaultMode": defaultMode}))
				}
			}
			if hp := asMap(vol["hostPath"]); hp != nil && hp["type"] == nil {
				vol = withField(vol, "hostPath", withDefaults(hp, map[string]any{"type": ""}))
			}
			return vol
		})
	}
	out = maps.Clone(out)
	out["spec"] = spec
	return out
}

// typed returns a pod template as the API server decodes and stores it: read
// into corev1.PodTemplateSpec (case-sensitive, as the API server reads
// JSON) and written back, so a field that is no pointer (omitempty) loses
// its zero value (hostNetwork: false, initialDelaySeconds: 0,
// priorityClassName: "", an env var's value: ""), and fields the type does
// not have are dropped. A template that does not decode is returned as it
// is: the API server refuses it, diff compares it as written.
func typed(t map[string]any) map[string]any {
	raw, err := json.Marshal(t)
	if err != nil {
		return t
	}
	var tpl corev1.PodTemplateSpec
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &tpl); err != nil {
		return t
	}
	if raw, err = json.Marshal(tpl); err != nil {
		return t
	}
	var out map[string]any
	// Read back as YAML, so numbers are ints as in the rest of the diff.
	if err := yaml.Unmarshal(raw, &out); err != nil {
		return t
	}
	// ObjectMeta writes a null creationTimestamp: no field of a template.
	if meta := asMap(out["metadata"]); meta != nil {
		delete(meta, "creationTimestamp")
		if len(meta) == 0 {
			delete(out, "metadata")
		}
	}
	return out
}

// podDefaults are the pod spec fields the API server sets when a pod
// template leaves them out: written out or left out, they store the same.
var podDefaults = map[string]any{
	"restartPolicy":                 "Always",
	"dnsPolicy":                     "ClusterFirst",
	"terminationGracePeriodSeconds": 30,
	"schedulerName":                 "default-scheduler",
	"securityContext":               map[string]any{},
}

// defaultMode is the mode the API server gives the files of a configMap,
// secret or projected volume that names none (0644).
const defaultMode = 0o644

// containerDefaults are the container fields the API server sets when left
// out: imagePullPolicy Always for an image without a tag or tagged latest,
// IfNotPresent for another tag or a digest.
func containerDefaults(c map[string]any) map[string]any {
	policy := "IfNotPresent"
	if image, _ := c["image"].(string); !strings.Contains(image, "@") {
		last := image[strings.LastIndexByte(image, '/')+1:]
		if i := strings.LastIndexByte(last, ':'); i < 0 || last[i+1:] == "latest" {
			policy = "Always"
		}
	}
	return map[string]any{
		"imagePullPolicy":          policy,
		"terminationMessagePath":   "/dev/termination-log",
		"terminationMessagePolicy": "File",
	}
}

// probeDefaults are the timings the API server gives a probe that leaves
// them out or sets them to 0.
var probeDefaults = map[string]any{"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}

// withHandlerDefaults returns container c with the fields the API server
// sets on its probes (the timings, and an httpGet's path and scheme), on its
// lifecycle handlers' httpGet, and on its env's field references (apiVersion
// v1) when they are left out.
func withHandlerDefaults(c map[string]any) map[string]any {
	out := maps.Clone(c)
	for _, k := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
		if p := asMap(c[k]); p != nil {
			p = maps.Clone(p)
			for f, v := range probeDefaults {
				if p[f] == nil || p[f] == 0 {
					p[f] = v
				}
			}
			out[k] = withHTTPGetDefaults(p)
		}
	}
	if l := asMap(c["lifecycle"]); l != nil {
		l = maps.Clone(l)
		for _, k := range []string{"postStart", "preStop"} {
			if h := asMap(l[k]); h != nil {
				l[k] = withHTTPGetDefaults(h)
			}
		}
		out["lifecycle"] = l
	}
	if env, ok := c["env"].([]any); ok {
		out["env"] = mapItems(env, func(e map[string]any) map[string]any {
			from := asMap(e["valueFrom"])
			if ref := asMap(from["fieldRef"]); ref != nil {
				return withField(e, "valueFrom", withField(from, "fieldRef", withDefaults(ref, map[string]any{"apiVersion": "v1"})))
			}
			return e
		})
	}
	return out
}

// withVolumeDefaults returns the source of a downwardAPI or projected
// volume with the apiVersion v1 the API server gives a field reference that
// names none.
func withVolumeDefaults(source string, src map[string]any) map[string]any {
	switch source {
	case "downwardAPI":
		if items, ok := src["items"].([]any); ok {
			src = maps.Clone(src)
			src["items"] = mapItems(items, func(it map[string]any) map[string]any {
				if ref := asMap(it["fieldRef"]); ref != nil {
					return withField(it, "fieldRef", withDefaults(ref, map[string]any{"apiVersion": "v1"}))
				}
				return it
			})
		}
	case "projected":
		if sources, ok := src["sources"].([]any); ok {
			src = maps.Clone(src)
			src["sources"] = mapItems(sources, func(ps map[string]any) map[string]any {
				if d := asMap(ps["downwardAPI"]); d != nil {
					return withField(ps, "downwardAPI", withVolumeDefaults("downwardAPI", d))
				}
				return ps
			})
		}
	}
	return src
}

// mapItems returns a list with f applied to each of its items that is a
// mapping.
func mapItems(items []any, f func(map[string]any) map[string]any) []any {
	out := make([]any, len(items))
	for i, it := range items {
		if m, ok := it.(map[string]any); ok {
			it = f(m)
		}
		out[i] = it
	}
	return out
}

// withHTTPGetDefaults returns a probe or handler whose httpGet has the path
// and scheme the API server sets when they are left out or empty.
func withHTTPGetDefaults(h map[string]any) map[string]any {
	g := asMap(h["httpGet"])
	if g == nil {
		return h
	}
	g = maps.Clone(g)
	for f, v := range map[string]any{"path": "/", "scheme": "HTTP"} {
		if g[f] == nil || g[f] == "" {
			g[f] = v
		}
	}
	h = maps.Clone(h)
	h["httpGet"] = g
	return h
}

// withDefaults returns a copy of m with each field of defaults that m
// leaves out (or sets to null) set to its default, and a container's
// ports with their protocol.
func withDefaults(m, defaults map[string]any) map[string]any {
	out := maps.Clone(m)
	for k, v := range defaults {
		if out[k] == nil {
			out[k] = v
		}
	}
	if ports, ok := out["ports"].([]any); ok {
		out["ports"] = mapItems(ports, func(p map[string]any) map[string]any {
			if p["protocol"] != nil {
				return p
			}
			p = maps.Clone(p)
			p["protocol"] = "TCP"
			return p
		})
	}
	return out
}

// canonicalResources returns resource requirements with their limits and
// requests in canonical form.
func canonicalResources(r map[string]any) map[string]any {
	r = maps.Clone(r)
	for _, k := range []string{"limits", "requests"} {
		if m, ok := r[k].(map[string]any); ok {
			r[k] = canonicalQuantities(m)
		}
	}
	return r
}

// canonicalQuantities returns m with the quantities under keys (every key
// when none is given) written as the API server stores them: 1000m is 1,
// 1024Mi is 1Gi, 1 is "1". A value that is no quantity stays as it is.
func canonicalQuantities(m map[string]any, keys ...string) map[string]any {
	out := maps.Clone(m)
	for k, v := range m {
		if len(keys) > 0 && !slices.Contains(keys, k) {
			continue
		}
		switch v.(type) {
		case string, int, int64, uint64, float64:
			if q, err := resource.ParseQuantity(fmt.Sprint(v)); err == nil {
				out[k] = q.String()
			}
		}
	}
	return out
}

// mapFields are the pod template fields (at any depth) whose Go type is a
// map: stored empty, they are no field, and apimachinery's semantic
// equality, with which the Deployment controller compares templates, takes
// an empty map for none. A struct written empty (affinity: {}) is a
// pointer to one: it stays.
var mapFields = map[string]bool{
	"labels": true, "annotations": true, "nodeSelector": true, "overhead": true, "limits": true, "requests": true,
	"matchLabels": true, "volumeAttributes": true, "options": true, // flexVolume's; dnsConfig's is a list
}

// withoutEmpty returns v without the map entries whose value is an
// empty list, or an empty map under one of mapFields, at any depth.
func withoutEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if l, ok := e.([]any); ok && len(l) == 0 {
				continue
			}
			if m, ok := e.(map[string]any); ok && len(m) == 0 && mapFields[k] {
				continue
			}
			out[k] = withoutEmpty(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutEmpty(e)
		}
		return out
	}
	return v
}

// rename returns v with every string equal to a key of names replaced by
// its value.
func rename(v any, names map[string]string) any {
	switch x := v.(type) {
	case string:
		if old, ok := names[x]; ok {
			return old
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = rename(e, names)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = rename(e, names)
		}
		return out
	}
	return v
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// changedKeys lists the keys of old and cur whose values differ (a key in
// one map only differs), sorted.
func changedKeys(old, cur map[string]any) []string {
	keys := unionKeys(old, cur)
	out := keys[:0]
	for _, k := range keys {
		if !reflect.DeepEqual(old[k], cur[k]) {
			out = append(out, k)
		}
	}
	return out
}

// unionKeys lists the keys of a and b, sorted.
func unionKeys[V any](a, b map[string]V) []string {
	set := make(map[string]bool, len(a)+len(b))
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// templateReason says which template fields changed, in words.
func templateReason(changes []FieldChange) string {
	paths := make([]string, len(changes))
	for i, c := range changes {
		paths[i] = c.Path
	}
	return "pod template changed: " + strings.Join(paths, ", ")
}

// templateCause is the short form for the summary: "its image changed".
func templateCause(changes []FieldChange) string {
	var fields []string
	seen := map[string]bool{}
	for _, c := range changes {
		if !seen[c.Field] {
			seen[c.Field] = true
			fields = append(fields, c.Field)
		}
	}
	return "its " + joinAnd(fields) + " changed"
}

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
