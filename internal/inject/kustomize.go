package inject

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
)

// kustomize runs the transformers of a kustomization (namePrefix,
// nameSuffix, namespace, then the `transformers:` functions) before it fixes
// the references to renamed objects, once, at the end of the build. A
// function therefore sees a ConfigMap already renamed (prod-cfg) while the
// workload still references its old name (cfg). kustomize records what it
// renamed in these build annotations, which it sends to the function and
// strips from its output.
const (
	previousNamesAnnotation      = "internal.config.kubernetes.io/previousNames"
	previousKindsAnnotation      = "internal.config.kubernetes.io/previousKinds"
	previousNamespacesAnnotation = "internal.config.kubernetes.io/previousNamespaces"
	prefixesAnnotation           = "internal.config.kubernetes.io/prefixes"
	suffixesAnnotation           = "internal.config.kubernetes.io/suffixes"
)

// defaultNamespace is what kustomize takes an empty namespace to mean when
// it compares namespaces.
const defaultNamespace = "default"

// buildContext is what kustomize's build annotations say about one object:
// its earlier identities, oldest first, and the name prefixes and suffixes
// it received, innermost first.
type buildContext struct {
	previous           []previousID
	prefixes, suffixes []string
}

type previousID struct {
	kind, name, namespace string
}

// readBuildContext reads an object's kustomize build annotations, as
// kustomize's resource.PrevIds and GetNamePrefixes/GetNameSuffixes do.
func readBuildContext(n *yaml.Node) (buildContext, error) {
	var b buildContext
	b.prefixes = csvAnnotation(n, prefixesAnnotation)
	b.suffixes = csvAnnotation(n, suffixesAnnotation)
	names := csvAnnotation(n, previousNamesAnnotation)
	if names == nil {
		return b, nil
	}
	kinds := csvAnnotation(n, previousKindsAnnotation)
	namespaces := csvAnnotation(n, previousNamespacesAnnotation)
	if len(kinds) != len(names) || len(namespaces) != len(names) {
		return b, fmt.Errorf("kustomize annotations %s, %s and %s list %d, %d and %d entries: they must match",
			previousNamesAnnotation, previousKindsAnnotation, previousNamespacesAnnotation, len(names), len(kinds), len(namespaces))
	}
	b.previous = make([]previousID, len(names))
	for i := range names {
		b.previous[i] = previousID{kind: kinds[i], name: names[i], namespace: namespaces[i]}
	}
	return b, nil
}

// csvAnnotation splits a comma-separated annotation; nil when it is unset.
func csvAnnotation(n *yaml.Node, key string) []string {
	v, ok := Annotation(n, key)
	if !ok {
		return nil
	}
	return strings.Split(v, ",")
}

func (b buildContext) hadName(name string) bool {
	for _, id := range b.previous {
		if id.name == name {
			return true
		}
	}
	return false
}

func (b buildContext) hadKind(kind hashing.Kind) bool {
	for _, id := range b.previous {
		if id.kind == string(kind) {
			return true
		}
	}
	return false
}

// affixesEqual is kustomize's Resource.PrefixesSuffixesEquals: with
// allowEmpty, an object without prefixes (suffixes) matches any.
func (b buildContext) affixesEqual(o buildContext, allowEmpty bool) bool {
	prefixes := sameEnding(b.prefixes, o.prefixes) || (allowEmpty && (len(b.prefixes) == 0 || len(o.prefixes) == 0))
	suffixes := sameEnding(b.suffixes, o.suffixes) || (allowEmpty && (len(b.suffixes) == 0 || len(o.suffixes) == 0))
	return prefixes && suffixes
}

// sameEnding is kustomize's utils.SameEndingSubSlice: the shorter list is
// the end of the longer one, and an empty list matches only an empty list.
func sameEnding(a, b []string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a) == 0 {
		return len(b) == 0
	}
	diff := len(b) - len(a)
	for i := range a {
		if b[i+diff] != a[i] {
			return false
		}
	}
	return true
}

// effectiveNamespace is kustomize's ResId.EffectiveNamespace for a
// namespaced object.
func effectiveNamespace(ns string) string {
	if ns == "" {
		return defaultNamespace
	}
	return ns
}

// renamedConfig is a ConfigMap or Secret kustomize has renamed or moved:
// references may still name it by an earlier name.
type renamedConfig struct {
	key configKey
	// written is its namespace as the document writes it (key's is
	// filled in with Options.DefaultNamespace).
	written string
	context buildContext
}

// referral returns the renamed config that kustomize will make a reference
// to kind/name from the referrer point to, following its
// filters/nameref selectReferral for a name field: configs in the
// referrer's namespace that once had that name and kind; if several, those
// whose prefixes and suffixes match the referrer's. When none is left, or
// several with different names (kustomize then refuses the reference),
// there is no referral and the reference keeps its name; the second result
// lists the ambiguous candidates. written is the referrer's namespace as
// written: kustomize compares the namespaces the objects carry, an empty one
// meaning "default", not those they will be installed into (a Helm chart
// through helmCharts often writes a namespace on its workloads and none on
// its ConfigMaps; the functionConfig's namespace fills both in for the hash,
// but kustomize leaves such a reference alone).
func (c configIndex) referral(referrer buildContext, written string, kind hashing.Kind, name string) (*renamedConfig, []*renamedConfig) {
	var candidates []*renamedConfig
	for i := range c.renamed {
		r := &c.renamed[i]
		if r.context.hadName(name) && r.context.hadKind(kind) && effectiveNamespace(r.written) == effectiveNamespace(written) {
			candidates = append(candidates, r)
		}
	}
	if len(candidates) == 1 {
		return candidates[0], nil
	}
	candidates = sieve(candidates, func(r *renamedConfig) bool { return r.context.affixesEqual(referrer, true) })
	if len(candidates) > 1 {
		candidates = sieve(candidates, func(r *renamedConfig) bool { return r.context.affixesEqual(referrer, false) })
	}
	switch {
	case len(candidates) == 0:
		return nil, nil
	case len(candidates) == 1:
		return candidates[0], nil
	}
	for _, r := range candidates[1:] {
		if r.key.name != candidates[0].key.name {
			return nil, candidates
		}
	}
	return candidates[0], nil
}

func sieve(list []*renamedConfig, keep func(*renamedConfig) bool) []*renamedConfig {
	var out []*renamedConfig
	for _, r := range list {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// resolver finds the objects a workload's references name, once kustomize
// has fixed them.
type resolver struct {
	configs   configIndex
	context   buildContext
	namespace string
	// written is the workload's namespace as written (see referral).
	written string
	// found holds, by kind and final name, the configs references resolved
	// to through an earlier name.
	found map[configRef]hashing.Content
	// findings are the ambiguous references.
	findings []string
	// names maps each reference as written to the name it resolved to,
	// where the two differ (a kustomize hash suffix).
	names map[configRef]string
}

type configRef struct {
	kind hashing.Kind
	name string
}

// resolve returns the name kustomize will write in a reference (its
// final name, hash suffix included) and the content it names in the
// cluster, or false when the render does not hold it.
func (r *resolver) resolve(kind hashing.Kind, name string) (string, hashing.Content, bool) {
	referral, ambiguous := r.configs.referral(r.context, r.written, kind, name)
	if referral != nil {
		// kustomize rewrites the reference to the referral's final name,
		// whatever its kind is now; the pod then reads kind by that name
		// in its own namespace. kustomize takes a namespace written as
		// default and none as one; the cluster does not (an object without
		// namespace goes where the apply, or the functionConfig's
		// namespace, puts it), so a referral of another namespace than the
		// workload's is no content of the render.
		name = r.configs.byName[referral.key].Name
		if content, ok := r.configs.lookup(r.namespace)(kind, name); ok {
			return name, content, true
		}
	}
	if len(ambiguous) > 0 {
		names := make([]string, len(ambiguous))
		for i, a := range ambiguous {
			names[i] = string(a.key.kind) + " " + hashing.ObjectName(a.key.namespace, a.key.name)
		}
		r.findings = append(r.findings, fmt.Sprintf("the reference to %s %s matches %s, all once named %s: kustomize will refuse it (found multiple possible referrals)",
			kind, name, strings.Join(names, " and "), name))
	}
	// A config found under the name it has before kustomize's hash suffix
	// is one kustomize did not choose for this reference (no referral):
	// the reference keeps that name, which no object will have.
	content, ok := r.configs.lookup(r.namespace)(kind, name)
	return name, content, ok && content.Name == name
}

// resolveUses maps the uses of a pod spec to the objects kustomize will
// make them name. Every use carries the name the reference will hold
// (kustomize's hash suffix included), external ones too; two references
// that end up naming one object merge as hashing.Discover merges them.
func (r *resolver) resolveUses(uses []hashing.Use) (inStream, external []hashing.Use) {
	r.found, r.names = map[configRef]hashing.Content{}, nil
	inIndex, outIndex := map[configRef]int{}, map[configRef]int{}
	for _, u := range uses {
		name, c, ok := r.resolve(u.Kind, u.Name)
		if name != u.Name {
			if r.names == nil {
				r.names = map[configRef]string{}
			}
			r.names[configRef{u.Kind, u.Name}] = name
		}
		u.Name = name
		ref := configRef{u.Kind, name}
		if ok {
			r.found[ref] = c
			inStream = addUse(inStream, inIndex, ref, u)
		} else {
			external = addUse(external, outIndex, ref, u)
		}
	}
	// Both in order of the final names, as Discover orders the names
	// written: the external list is the one a stream written with the
	// final names gets.
	hashing.SortUses(inStream)
	hashing.SortUses(external)
	return inStream, external
}

// addUse appends u to uses, or merges it into the use of the same object.
func addUse(uses []hashing.Use, index map[configRef]int, ref configRef, u hashing.Use) []hashing.Use {
	i, seen := index[ref]
	if !seen {
		index[ref] = len(uses)
		return append(uses, u)
	}
	uses[i] = mergeUse(uses[i], u)
	return uses
}

// missingKeys are warnings for the required keys (hashing.DiscoverRequired, by
// the names written) that a config resolveUses found in the stream lacks:
// the kubelet will not start such a pod.
func (r *resolver) missingKeys(required map[string][]string) []string {
	refs := make([]string, 0, len(required))
	for ref := range required {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	var out []string
	for _, ref := range refs {
		kind, written, _ := strings.Cut(ref, "/")
		name, renamed := r.names[configRef{hashing.Kind(kind), written}]
		if !renamed {
			name = written
		}
		c, ok := r.found[configRef{hashing.Kind(kind), name}]
		if !ok {
			continue
		}
		var missing []string
		for _, k := range required[ref] {
			if _, has := c.Keys[k]; !has {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 {
			continue
		}
		noun := "key"
		if len(missing) > 1 {
			noun = "keys"
		}
		out = append(out, fmt.Sprintf("reads %s %s of %s %s, which has no such key: pods will not start until it has (optional: true if the key may be absent)",
			noun, strings.Join(missing, ", "), kind, hashing.ObjectName(r.namespace, name)))
	}
	return out
}

// lookup serves hashing.Compute the contents resolveUses found.
func (r *resolver) lookup(kind hashing.Kind, name string) (hashing.Content, bool) {
	c, ok := r.found[configRef{kind, name}]
	return c, ok
}

// mergeUse combines two uses of one object: whole if either is, the union
// of the keys otherwise, optional only if both are.
func mergeUse(a, b hashing.Use) hashing.Use {
	a.Optional = a.Optional && b.Optional
	a.All = a.All || b.All
	if a.All {
		a.Keys = nil
		return a
	}
	seen := map[string]bool{}
	var keys []string
	for _, k := range append(append([]string(nil), a.Keys...), b.Keys...) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	a.Keys = keys
	return a
}
