package stream

import (
	"bytes"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// editor collects byte edits to one document. Each edit method either
// records its edits and returns true, or returns false when the layout is one
// it does not edit in place (flow style, values spanning lines); the caller
// then re-encodes that one document instead.
type editor struct {
	text    []byte
	lines   []int // byte offset of each line's start; lines[0] is line 1
	newline string
	edits   []edit
}

type edit struct {
	start, end int
	text       string
}

func (e edit) isInsertion() bool { return e.start == e.end }

func newEditor(text []byte) *editor {
	e := &editor{text: text, lines: make([]int, 1, bytes.Count(text, []byte("\n"))+1), newline: "\n", edits: make([]edit, 0, 2)}
	for i, b := range text {
		if b == '\n' {
			e.lines = append(e.lines, i+1)
		}
	}
	if bytes.Contains(text, []byte("\r\n")) {
		e.newline = "\r\n"
	}
	return e
}

// lineStart returns the offset of a 1-based line.
func (e *editor) lineStart(line int) int {
	if line-1 < len(e.lines) {
		return e.lines[line-1]
	}
	return len(e.text)
}

// keyStart returns the offset of a node that begins its line after
// indentation only, or false.
func (e *editor) keyStart(n *yaml.Node) (int, bool) {
	start := e.lineStart(n.Line)
	at := start + n.Column - 1
	if at > len(e.text) {
		return 0, false
	}
	for _, b := range e.text[start:at] {
		if b != ' ' {
			return 0, false
		}
	}
	return at, true
}

// kv is one annotation to set; an empty value removes it.
type kv struct{ key, value string }

// set makes each annotation of kvs equal its value in the metadata of
// mapping m. New keys are inserted together, ahead of the existing ones.
func (e *editor) set(m *yaml.Node, kvs []kv) bool {
	meta, ok := blockChild(m, "metadata")
	if !ok {
		return false
	}
	if meta == nil {
		return e.insertBefore(m, kvs, "metadata:", "annotations:")
	}
	ann, ok := blockChild(meta, "annotations")
	if !ok {
		return false
	}
	if ann == nil {
		return e.insertBefore(meta, kvs, "annotations:")
	}
	var addBuf [2]kv
	add := addBuf[:0]
	for _, p := range kvs {
		k, v := child(ann, p.key)
		if k == nil {
			add = append(add, p)
		} else if !e.replaceScalar(k, v, p.value) {
			return false
		}
	}
	return len(add) == 0 || e.insertBefore(ann, add)
}

// clear removes annotations keys from the metadata of mapping m; adding
// says how many set will add to it in the same edit.
func (e *editor) clear(m *yaml.Node, keys []string, adding int) bool {
	meta, ok := blockChild(m, "metadata")
	if !ok || meta == nil {
		return ok
	}
	ann, ok := blockChild(meta, "annotations")
	if !ok || ann == nil {
		return ok
	}
	removed := 0
	for _, key := range keys {
		k, v := child(ann, key)
		if k == nil {
			continue
		}
		if !e.deleteLine(k, v) {
			return false
		}
		removed++
	}
	if adding == 0 && 2*removed == len(ann.Content) {
		// No annotation left: remove the annotations key too, unless that
		// would leave metadata empty.
		annKey, _ := child(meta, "annotations")
		return len(meta.Content) > 2 && ann.Content[0].Line > annKey.Line && e.deleteLine(annKey, nil)
	}
	return true
}

// insertBefore inserts a "key: value" line for each of kvs before m's
// first key, at its indentation, nested under the parent keys given (each
// two spaces deeper).
func (e *editor) insertBefore(m *yaml.Node, kvs []kv, parents ...string) bool {
	first := m.Content[0]
	if _, ok := e.keyStart(first); !ok {
		return false
	}
	indent := first.Column - 1
	inner := indent + 2*len(parents)
	size := len(parents)*(inner+len(e.newline)) + len(kvs)*(inner+2+len(e.newline))
	for _, p := range parents {
		size += len(p)
	}
	for _, p := range kvs {
		size += len(p.key) + len(p.value)
	}
	var b strings.Builder
	b.Grow(size)
	for depth, p := range parents {
		writeIndent(&b, indent+2*depth)
		b.WriteString(p)
		b.WriteString(e.newline)
	}
	for _, p := range kvs {
		writeIndent(&b, inner)
		b.WriteString(p.key)
		b.WriteString(": ")
		b.WriteString(p.value)
		b.WriteString(e.newline)
	}
	start := e.lineStart(first.Line)
	e.edits = append(e.edits, edit{start: start, end: start, text: b.String()})
	return true
}

func writeIndent(b *strings.Builder, n int) {
	for ; n > 0; n-- {
		b.WriteByte(' ')
	}
}

// replaceScalar replaces the single-line scalar v of key k with value.
func (e *editor) replaceScalar(k, v *yaml.Node, value string) bool {
	start, end, ok := e.scalarSpan(k, v)
	if !ok {
		return false
	}
	if string(e.text[start:end]) != value {
		e.edits = append(e.edits, edit{start: start, end: end, text: value})
	}
	return true
}

// deleteLine removes the line of key k, which must hold k and its
// single-line scalar v (or, with v nil, only k).
func (e *editor) deleteLine(k, v *yaml.Node) bool {
	if _, ok := e.keyStart(k); !ok {
		return false
	}
	if v != nil {
		if _, _, ok := e.scalarSpan(k, v); !ok {
			return false
		}
	} else if k.Line+1 > len(e.lines) {
		return false
	}
	e.edits = append(e.edits, edit{start: e.lineStart(k.Line), end: e.lineStart(k.Line + 1)})
	return true
}

// scalarSpan finds the bytes of a plain or quoted scalar that sits on its
// key's line, and checks they read back as the node's value.
func (e *editor) scalarSpan(k, v *yaml.Node) (int, int, bool) {
	if v.Kind != yaml.ScalarNode || v.Line != k.Line || v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return 0, 0, false
	}
	if _, ok := e.keyStart(k); !ok || !isASCII(k.Value) {
		return 0, 0, false
	}
	start := e.lineStart(v.Line) + v.Column - 1
	lineEnd := e.lineStart(v.Line + 1)
	if start >= lineEnd || start > len(e.text) {
		return 0, 0, false
	}
	rest := e.text[start:lineEnd]
	var n int
	switch v.Style {
	case yaml.DoubleQuotedStyle:
		n = quotedEnd(rest, '"')
	case yaml.SingleQuotedStyle:
		n = quotedEnd(rest, '\'')
	default:
		n = plainEnd(rest)
		if string(rest[:n]) != v.Value {
			return 0, 0, false
		}
	}
	if end := start + n; n == 0 || (end < len(e.text) && !isSpace(e.text[end])) {
		return 0, 0, false // something glued to the value ("\"\"#"): not a span to replace
	}
	return start, start + n, true
}

func plainEnd(rest []byte) int {
	n := len(rest)
	if i := bytes.Index(rest, []byte(" #")); i >= 0 {
		n = i
	}
	return len(bytes.TrimRight(rest[:n], " \t\r\n"))
}

func quotedEnd(rest []byte, q byte) int {
	for i := 1; i < len(rest); i++ {
		switch {
		case q == '"' && rest[i] == '\\':
			i++
		case rest[i] == q && q == '\'' && i+1 < len(rest) && rest[i+1] == '\'':
			i++
		case rest[i] == q:
			return i + 1
		}
	}
	return 0
}

// apply returns the text with the edits made.
func (e *editor) apply() []byte {
	// By position; at one position an insertion goes before a line it
	// precedes is deleted or replaced.
	sort.SliceStable(e.edits, func(i, j int) bool {
		a, b := e.edits[i], e.edits[j]
		if a.start != b.start {
			return a.start < b.start
		}
		return a.isInsertion() && !b.isInsertion()
	})
	out := make([]byte, 0, len(e.text)+128)
	pos := 0
	for _, ed := range e.edits {
		out = append(out, e.text[pos:ed.start]...)
		out = append(out, ed.text...)
		pos = ed.end
	}
	return append(out, e.text[pos:]...)
}

// blockChild returns the value of key in block mapping m when it is itself a
// non-empty block mapping; nil when the key is absent; false when the layout
// is not one to edit in place.
func blockChild(m *yaml.Node, key string) (*yaml.Node, bool) {
	if m.Kind != yaml.MappingNode || m.Style&yaml.FlowStyle != 0 || len(m.Content) == 0 {
		return nil, false
	}
	k, v := child(m, key)
	if k == nil {
		return nil, true
	}
	if v.Kind != yaml.MappingNode || v.Style&yaml.FlowStyle != 0 || len(v.Content) == 0 {
		return nil, false
	}
	return v, true
}

func child(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }
