// Package yamlnorm makes a parsed YAML document mean what the API server
// will store for it (what sigs.k8s.io/yaml.YAMLToJSON, used by kubectl and
// Helm, produces): anchors, aliases and merge keys are expanded, while a key
// written twice in one mapping and an alias bomb are refused.
package yamlnorm

import (
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/yamlnode"
)

// MaxNodes bounds how many nodes one document may expand to through
// aliases, so that an alias bomb is refused instead of filling memory.
const MaxNodes = 1_000_000

// mergeTag is the tag yaml.v3 gives a plain "<<" key.
const mergeTag = "!!merge"

// Result tells which nodes of an expanded document are not where the text
// has them: copies made for aliases and merge keys, mappings that received
// merged entries, and nodes under an anchor some alias refers to (writing
// there would change every use of the anchor). A nil Result means the
// document had nothing to expand.
type Result struct {
	moved map[*yaml.Node]bool
}

// Editable reports whether text edits at the positions of nodes change
// those nodes only: none of them is a copy, received merged entries or lies
// under an anchor that an alias repeats elsewhere.
func (r *Result) Editable(nodes ...*yaml.Node) bool {
	if r == nil {
		return true
	}
	for _, n := range nodes {
		if n != nil && r.moved[n] {
			return false
		}
	}
	return true
}

// Normalise checks n for repeated mapping keys and, when it holds aliases or
// merge keys, expands them in place (bounded by MaxNodes) and clears its
// anchors. Errors name the path of the offending mapping and its lines.
func Normalise(n *yaml.Node) (*Result, error) {
	if n == nil {
		return nil, nil
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	special, err := check(n)
	if err != nil || !special {
		return nil, err
	}
	if err := CheckAliases(n); err != nil {
		return nil, err
	}
	r := &Result{moved: map[*yaml.Node]bool{}}
	for anchor := range referenced(n, map[*yaml.Node]bool{}) {
		markAll(anchor, r.moved)
	}
	x := expander{r: r, done: map[*yaml.Node]bool{}}
	if err := x.expand(n); err != nil {
		return nil, err
	}
	clearAnchors(n)
	return r, nil
}

// check walks the tree as written (aliases not followed: their anchors are
// checked where they are defined), refuses a key written twice in a mapping,
// and reports whether the tree holds an alias or a merge key. It builds no
// path on the way down: an error collects its path as it returns.
func check(n *yaml.Node) (bool, error) {
	special := false
	switch n.Kind {
	case yaml.AliasNode:
		return true, nil
	case yaml.MappingNode:
		var seen map[string]int // for large mappings; small ones are scanned
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Tag == mergeTag || k.Kind == yaml.AliasNode {
				special = true
			}
			if k.Tag == mergeTag && !mergeable(n.Content[i+1]) {
				return false, &pathError{err: yamlnode.AtNodeLine(k.Line, mergeTakesMaps)}
			}
			name := keyName(k)
			if line, dup := earlier(n.Content[:i], k, &seen); dup {
				return false, &pathError{err: yamlnode.AtNodeLines(fmt.Sprintf("key %q appears twice", name), line, k.Line, "; the API server would keep only one")}
			}
			s, err := check(n.Content[i+1])
			if err != nil {
				return false, within(err, "."+name)
			}
			special = special || s
		}
		return special, nil
	}
	for i, c := range n.Content {
		s, err := check(c)
		if err != nil {
			return false, within(err, "["+strconv.Itoa(i)+"]")
		}
		special = special || s
	}
	return special, nil
}

// mergeTakesMaps is the error for a merge key whose value is not a map or
// a list of maps.
const mergeTakesMaps = "a merge key (<<) takes a map or a list of maps"

// mergeable reports whether v, a merge key's value as written, is a map or
// a list of maps, aliases followed. An alias to no anchor is left to
// CheckAliases.
func mergeable(v *yaml.Node) bool {
	isMap := func(n *yaml.Node) bool {
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil {
				return true
			}
			n = n.Alias
		}
		return n.Kind == yaml.MappingNode
	}
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if v.Kind != yaml.SequenceNode {
		return isMap(v)
	}
	for _, item := range v.Content {
		if !isMap(item) {
			return false
		}
	}
	return true
}

// smallMapping is the size up to which check looks for a repeated key by
// scanning the keys before it rather than building a map.
const smallMapping = 16

// earlier reports whether k, a key written after the mapping entries
// before, is among their keys, and the line where it was written first. A
// key without a name (named) is never.
func earlier(before []*yaml.Node, k *yaml.Node, seen *map[string]int) (int, bool) {
	if !named(k) {
		return 0, false
	}
	name := keyName(k)
	if len(before)/2 < smallMapping {
		for j := 0; j < len(before); j += 2 {
			if named(before[j]) && keyName(before[j]) == name {
				return before[j].Line, true
			}
		}
		return 0, false
	}
	if *seen == nil {
		*seen = make(map[string]int, len(before))
		for j := 0; j < len(before); j += 2 {
			if _, ok := (*seen)[keyName(before[j])]; !ok && named(before[j]) {
				(*seen)[keyName(before[j])] = before[j].Line
			}
		}
	}
	first, dup := (*seen)[name]
	if !dup {
		(*seen)[name] = k.Line
	}
	return first, dup
}

// pathError is an error found by check, with the path to where it was
// found, collected innermost first as check returns.
type pathError struct {
	segments []string
	err      error
}

func (e *pathError) Error() string {
	var b strings.Builder
	for i := len(e.segments) - 1; i >= 0; i-- {
		b.WriteString(e.segments[i])
	}
	path := strings.TrimPrefix(b.String(), ".")
	if path == "" {
		return e.err.Error()
	}
	return path + ": " + e.err.Error()
}

func (e *pathError) Unwrap() error { return e.err }

// within adds the segment leading to where err was found.
func within(err error, segment string) error {
	if pe, ok := err.(*pathError); ok { //nolint:errorlint // only check makes these
		pe.segments = append(pe.segments, segment)
	}
	return err
}

func keyName(k *yaml.Node) string {
	if k.Tag == mergeTag {
		return "<<"
	}
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	return k.Value
}

// named reports whether k, a mapping key, has a name to compare: a
// scalar, a merge key, or an alias to a scalar. A list or map as a key has
// none (kubectl and Helm refuse it; a reader of the field it stands in says
// so): two such keys are not the same key, nor is one of them the key "".
func named(k *yaml.Node) bool {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	return k.Kind == yaml.ScalarNode
}

// CheckAliases refuses a tree whose aliases would expand it beyond MaxNodes
// nodes (an alias bomb), that holds an alias to an unknown anchor, or an
// alias inside its own anchor.
func CheckAliases(n *yaml.Node) error {
	_, err := expandedSize(n, map[*yaml.Node]int{})
	return err
}

// inProgress marks a node being sized, to catch an alias inside its own
// anchor.
const inProgress = -1

func expandedSize(n *yaml.Node, memo map[*yaml.Node]int) (int, error) {
	// The names of anchors and aliases stay out of errors: an unquoted
	// value that starts with "&" or "*" is one, and its name the value.
	line := n.Line
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 0, yamlnode.AtNodeLine(line, yamlnode.UnknownAlias)
		}
		n = n.Alias
	}
	switch size, seen := memo[n]; {
	case seen && size == inProgress:
		return 0, yamlnode.AtNodeLine(line, yamlnode.SelfAlias)
	case seen:
		return size, nil
	}
	memo[n] = inProgress
	size := 1
	for _, c := range n.Content {
		s, err := expandedSize(c, memo)
		if err != nil {
			return 0, err
		}
		size += s
		if size > MaxNodes {
			return 0, fmt.Errorf("document contains excessive aliasing (expands to more than %d nodes)", MaxNodes)
		}
	}
	memo[n] = size
	return size, nil
}

// referenced collects the anchored nodes that aliases refer to.
func referenced(n *yaml.Node, out map[*yaml.Node]bool) map[*yaml.Node]bool {
	if n.Kind == yaml.AliasNode {
		out[n.Alias] = true
		return out
	}
	for _, c := range n.Content {
		referenced(c, out)
	}
	return out
}

func markAll(n *yaml.Node, set map[*yaml.Node]bool) {
	set[n] = true
	for _, c := range n.Content {
		markAll(c, set)
	}
}

// expander replaces aliases by copies of their (expanded) anchors and
// applies merge keys the way sigs.k8s.io/yaml does: the entries of a
// mapping are applied in the order written, a merge key setting every key
// of its map (of its maps, the first taking precedence, for a list), so
// that a later entry overrides an earlier one.
type expander struct {
	r    *Result
	done map[*yaml.Node]bool
}

func (x *expander) expand(n *yaml.Node) error {
	if x.done[n] {
		return nil
	}
	x.done[n] = true
	for i, c := range n.Content {
		if c.Kind == yaml.AliasNode {
			if err := x.expand(c.Alias); err != nil {
				return err
			}
			n.Content[i] = x.copy(c.Alias)
			continue
		}
		if err := x.expand(c); err != nil {
			return err
		}
	}
	if n.Kind == yaml.MappingNode {
		return x.merge(n)
	}
	return nil
}

func (x *expander) copy(n *yaml.Node) *yaml.Node {
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = x.copy(k)
	}
	x.r.moved[&c] = true
	return &c
}

func (x *expander) merge(n *yaml.Node) error {
	hasMerge := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		hasMerge = hasMerge || n.Content[i].Tag == mergeTag
	}
	if !hasMerge {
		return nil
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	index := map[string]int{}
	set := func(k, v *yaml.Node) {
		if i, ok := index[k.Value]; ok {
			out[i+1] = v
			return
		}
		index[k.Value] = len(out)
		out = append(out, k, v)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag != mergeTag {
			set(k, v)
			continue
		}
		// check refused such a value where the tree wrote "<<"; an alias
		// key that names a "<<" becomes one only here.
		if !mergeable(v) {
			return yamlnode.AtNodeLine(k.Line, mergeTakesMaps)
		}
		maps := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			maps = maps[:0]
			for j := len(v.Content) - 1; j >= 0; j-- {
				maps = append(maps, v.Content[j])
			}
		}
		for _, m := range maps {
			for j := 0; j+1 < len(m.Content); j += 2 {
				set(x.copy(m.Content[j]), x.copy(m.Content[j+1]))
			}
		}
	}
	n.Content = out
	x.r.moved[n] = true
	return nil
}

func clearAnchors(n *yaml.Node) {
	n.Anchor = ""
	for _, c := range n.Content {
		clearAnchors(c)
	}
}

// Describe names a node kind for error messages: a scalar by its tag.
func Describe(n *yaml.Node) string {
	if name, ok := yamlnode.NonScalar(n); ok {
		return name
	}
	switch n.Tag {
	case yaml.NodeTagInt, yaml.NodeTagFloat:
		return "a number"
	case yaml.NodeTagBool:
		return "a boolean"
	case yaml.NodeTagNull:
		return "null"
	case yaml.NodeTagString:
		return "a string"
	case "!!timestamp":
		return "a timestamp"
	}
	return "a " + n.Tag + " value"
}
