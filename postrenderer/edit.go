package postrenderer

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/annotations"
	"github.com/confighash/confighash/internal/yamlnode"
)

// editor collects byte edits to one document. Each edit method either
// records its edits and returns true, or returns false when the layout is one
// it cannot edit in place; the caller then re-encodes that one document
// instead (see rewrite for what is left to that).
//
// It edits block and flow mappings alike: in block style new entries are
// lines at the indentation of their siblings; in flow style they are
// entries with double-quoted values and keys quoted as the mapping's are,
// on lines of their own when the mapping has one entry a line. An empty
// metadata or annotations ({} or null) is filled in place.
type editor struct {
	text    []byte
	lines   []int // byte offset of each line's start; lines[0] is line 1
	newline string
	edits   []edit
	root    *yaml.Node
	step    int // block indentation step, 0 until needed
}

type edit struct {
	start, end int
	text       string
}

func (e edit) isInsertion() bool { return e.start == e.end }

func newEditor(text []byte, root *yaml.Node) *editor {
	e := &editor{text: text, lines: make([]int, 1, bytes.Count(text, []byte("\n"))+1), newline: "\n", edits: make([]edit, 0, 2), root: root}
	for i, b := range text {
		switch {
		case b == '\n':
			e.lines = append(e.lines, i+1)
		case b >= utf8.RuneSelf:
			// NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR break lines
			// for the parser, whose line numbers the edits follow.
			if n := yamlnode.UnicodeBreak(text[i:]); n > 0 {
				e.lines = append(e.lines, i+n)
			}
		}
	}
	if bytes.Contains(text, []byte("\r\n")) {
		e.newline = "\r\n"
	}
	return e
}

func (e *editor) add(start, end int, text string) {
	e.edits = append(e.edits, edit{start: start, end: end, text: text})
}

// kv is one annotation to set; an empty value removes it.
type kv struct{ key, value string }

// entry is a mapping entry to write: a scalar value or nested entries.
type entry struct {
	key, value string
	children   []entry
}

// nest puts kvs under the parent keys given, outermost first.
func nest(kvs []kv, parents ...string) []entry {
	es := make([]entry, len(kvs))
	for i, p := range kvs {
		es[i] = entry{key: p.key, value: p.value}
	}
	for i := len(parents) - 1; i >= 0; i-- {
		es = []entry{{key: parents[i], children: es}}
	}
	return es
}

// annotate sets or clears annotations (an empty value clears) in the
// metadata of mapping m, doing nothing for those that already say so. A
// value that YAML would not read as that string (an unquoted number) is
// written anew.
func (e *editor) annotate(m *yaml.Node, kvs ...kv) bool {
	var setBuf [2]kv
	var delBuf [2]string
	set, del := setBuf[:0], delBuf[:0]
	for _, p := range kvs {
		v := annotations.Node(m, p.key)
		switch {
		case p.value == "" && v != nil:
			del = append(del, p.key)
		case p.value != "" && (v == nil || !annotations.ReadsAsString(v) || v.Value != p.value):
			set = append(set, p)
		}
	}
	if len(set) == 0 && len(del) == 0 {
		return true
	}
	return e.change(m, set, del)
}

// change makes the edits annotate decided on.
func (e *editor) change(m *yaml.Node, set []kv, del []string) bool {
	if m.Kind != yaml.MappingNode || len(m.Content) == 0 {
		return false
	}
	metaKey, meta := child(m, "metadata")
	switch {
	case metaKey == nil:
		return len(set) == 0 || e.insertEntries(m, nest(set, "metadata", "annotations"))
	case isEmpty(meta):
		return len(set) == 0 || e.fill(metaKey, meta, m, nest(set, "annotations"))
	case meta.Kind != yaml.MappingNode:
		return false
	}
	annKey, ann := child(meta, "annotations")
	switch {
	case annKey == nil:
		return len(set) == 0 || e.insertEntries(meta, nest(set, "annotations"))
	case isEmpty(ann):
		return len(set) == 0 || e.fill(annKey, ann, meta, nest(set))
	case ann.Kind != yaml.MappingNode:
		return false
	}
	var drop []int
	for i := 0; i+1 < len(ann.Content); i += 2 {
		for _, key := range del {
			if ann.Content[i].Value == key {
				drop = append(drop, i/2)
			}
		}
	}
	var add []kv
	for _, p := range set {
		if k, v := child(ann, p.key); k == nil {
			add = append(add, p)
		} else if !e.replaceScalar(v, p.value, isFlow(ann)) {
			return false
		}
	}
	if len(drop) == len(ann.Content)/2 {
		switch {
		case len(add) > 0 && isFlow(ann):
			return e.replaceValue(annKey, ann, isFlow(meta), "{"+e.flowText(nest(add), plainKeys(ann), 0, 0)+"}")
		case len(add) > 0:
			// Insertions go ahead of the lines deleted at the same place.
		case len(meta.Content) > 2:
			// No annotation left: remove the annotations key too, as the
			// kyaml filter does.
			return e.removeEntries(meta, []int{indexOf(meta, annKey)})
		default:
			return e.replaceValue(metaKey, meta, isFlow(m), "{}")
		}
	}
	return e.removeEntries(ann, drop) && (len(add) == 0 || e.insertEntries(ann, nest(add)))
}

// doubleQuoted writes s as a double-quoted scalar that is valid YAML and
// valid JSON.
func doubleQuoted(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0xffff:
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)))
			b.WriteString(h)
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// scalarText writes s for block style: plain when that is safe, else
// double-quoted.
func scalarText(s string) string {
	if annotations.PlainSafe(s) {
		return s
	}
	return doubleQuoted(s)
}

// blockText writes es as block-style lines at indent.
func (e *editor) blockText(es []entry, indent int) string {
	var b strings.Builder
	e.writeBlock(&b, es, indent)
	return b.String()
}

func (e *editor) writeBlock(b *strings.Builder, es []entry, indent int) {
	for _, en := range es {
		writeIndent(b, indent)
		b.WriteString(scalarText(en.key))
		b.WriteByte(':')
		if en.children != nil {
			b.WriteString(e.newline)
			e.writeBlock(b, en.children, indent+e.blockStep())
			continue
		}
		b.WriteByte(' ')
		b.WriteString(scalarText(en.value))
		b.WriteString(e.newline)
	}
}

// flowText writes es as the entries of a flow mapping: on one line when
// step is 0, else one entry a line, the first one not indented (the caller
// is at indent already). Values are double-quoted; keys too, unless plain
// is set and the key is safe to write plain in a flow mapping.
func (e *editor) flowText(es []entry, plain bool, indent, step int) string {
	var b strings.Builder
	e.writeFlow(&b, es, plain, indent, step)
	return b.String()
}

// plainKeys tells whether keys written into the flow mapping m, or into an
// empty mapping that is a value of m, may be plain: when m's first key is,
// as in {labels: {app: web}}. A JSON document's keys stay double-quoted.
func plainKeys(m *yaml.Node) bool {
	return len(m.Content) > 0 && m.Content[0].Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0
}

// flowKey writes key for a flow mapping: plain when plain is set and that
// is safe (no comma or colon, which end or split a plain key in flow
// style), else double-quoted.
func flowKey(key string, plain bool) string {
	if plain && annotations.PlainSafe(key) && !strings.ContainsAny(key, ",:") {
		return key
	}
	return doubleQuoted(key)
}

func (e *editor) writeFlow(b *strings.Builder, es []entry, plain bool, indent, step int) {
	for i, en := range es {
		if i > 0 {
			b.WriteByte(',')
			if step == 0 {
				b.WriteByte(' ')
			} else {
				b.WriteString(e.newline)
				writeIndent(b, indent)
			}
		}
		b.WriteString(flowKey(en.key, plain))
		b.WriteString(": ")
		if en.children == nil {
			b.WriteString(doubleQuoted(en.value))
			continue
		}
		b.WriteByte('{')
		if step > 0 {
			b.WriteString(e.newline)
			writeIndent(b, indent+step)
		}
		e.writeFlow(b, en.children, plain, indent+step, step)
		if step > 0 {
			b.WriteString(e.newline)
			writeIndent(b, indent)
		}
		b.WriteByte('}')
	}
}

func writeIndent(b *strings.Builder, n int) {
	for ; n > 0; n-- {
		b.WriteByte(' ')
	}
}

// blockStep is the document's block indentation step: how much deeper than
// its key the first nested block mapping is indented; 2 if it has none.
func (e *editor) blockStep() int {
	if e.step == 0 {
		e.step = findStep(e.root)
		if e.step <= 0 {
			e.step = 2
		}
	}
	return e.step
}

func findStep(n *yaml.Node) int {
	if n == nil || n.Kind != yaml.MappingNode {
		return 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind == yaml.MappingNode && !isFlow(v) && len(v.Content) > 0 && v.Line > k.Line {
			if d := v.Column - k.Column; d > 0 {
				return d
			}
		}
	}
	for i := 1; i < len(n.Content); i += 2 {
		if d := findStep(n.Content[i]); d > 0 {
			return d
		}
	}
	return 0
}

// insertEntries adds es to the non-empty mapping m, ahead of its first key.
func (e *editor) insertEntries(m *yaml.Node, es []entry) bool {
	if isFlow(m) {
		return e.insertFlow(m, es)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if _, ok := e.keyStart(k); ok {
			start := e.lines[k.Line-1]
			e.add(start, start, e.blockText(es, k.Column-1))
			return true
		}
	}
	return false
}

// insertFlow adds es to the flow mapping m, ahead of its first key: on a
// line of its own, indented as that key, when the key starts its line.
func (e *editor) insertFlow(m *yaml.Node, es []entry) bool {
	if len(m.Content) == 0 {
		return false
	}
	k := m.Content[0]
	at, ok := e.offset(k)
	if !ok {
		return false
	}
	lineStart := e.lines[k.Line-1]
	if k.Line > m.Line && isBlank(e.text[lineStart:at]) {
		step := (k.Column - 1) - indentOf(e.text[e.lines[m.Line-1]:])
		if step <= 0 {
			step = 2
		}
		e.add(at, at, e.flowText(es, plainKeys(m), k.Column-1, step)+","+e.newline+string(e.text[lineStart:at]))
		return true
	}
	e.add(at, at, e.flowText(es, plainKeys(m), 0, 0)+", ")
	return true
}

// fill writes es as the value of key k, whose value v is empty ({}, or null
// written as nothing, ~ or null): a block under the key, or a flow mapping
// when k's mapping, parent, is flow style.
func (e *editor) fill(k, v, parent *yaml.Node, es []entry) bool {
	parentFlow := isFlow(parent)
	if v.Anchor != "" || k.Anchor != "" {
		return false
	}
	colon, ok := e.colonEnd(k)
	if !ok {
		return false
	}
	end := colon
	if v.Kind == yaml.MappingNode || v.Value != "" {
		// The value may be on a line of its own: toYaml of an empty map
		// after nindent writes "annotations:" and "{}" below it.
		start, ok := e.offset(v)
		if !ok || start < colon || len(bytes.TrimLeft(e.text[colon:start], " \t\r\n")) != 0 {
			return false
		}
		if end, ok = e.valueEnd(v); !ok {
			return false
		}
	} else if parentFlow || !e.restIsBlank(colon) {
		return false // a null written as nothing
	}
	if parentFlow {
		e.add(colon, end, " {"+e.flowText(es, plainKeys(parent), 0, 0)+"}")
		return true
	}
	if !e.restIsBlank(end) {
		return false
	}
	text := e.blockText(es, k.Column-1+e.blockStep())
	e.add(colon, end, e.newline+strings.TrimSuffix(text, e.newline))
	return true
}

// replaceValue replaces the value v of key k with text.
func (e *editor) replaceValue(k, v *yaml.Node, parentFlow bool, text string) bool {
	if v.Anchor != "" {
		return false
	}
	colon, ok := e.colonEnd(k)
	if !ok {
		return false
	}
	end, ok := e.valueEnd(v)
	if !ok || !parentFlow && !e.restIsBlank(end) {
		return false
	}
	e.add(colon, end, " "+text)
	return true
}

// replaceScalar replaces the single-line scalar v with value, keeping its
// quoting style when it is quoted; in a flow mapping it is double-quoted.
func (e *editor) replaceScalar(v *yaml.Node, value string, flow bool) bool {
	start, end, ok := e.scalarSpan(v)
	if !ok || v.Anchor != "" {
		return false
	}
	text := scalarText(value)
	switch {
	case flow || v.Style&yaml.DoubleQuotedStyle != 0:
		text = doubleQuoted(value)
	case v.Style&yaml.SingleQuotedStyle != 0 && isPrintableASCII(value):
		text = "'" + strings.ReplaceAll(value, "'", "''") + "'"
	}
	if end < len(e.text) && e.text[end] == '#' {
		// A comment glued to a quoted value ("..."#, which yaml.v3 reads):
		// quote the new value too, and part it from the comment.
		if !strings.HasPrefix(text, "'") {
			text = doubleQuoted(value)
		}
		text += " "
	}
	if string(e.text[start:end]) != text {
		e.add(start, end, text)
	}
	return true
}

// removeEntries removes the entries of mapping m at the given indexes
// (ascending), leaving at least one.
func (e *editor) removeEntries(m *yaml.Node, idx []int) bool {
	n := len(m.Content) / 2
	if isFlow(m) {
		// An entry followed by a kept one goes up to the next key; one of a
		// run of removed entries at the end goes from the end of the value
		// before it, taking the comma with it.
		for j, i := range idx {
			k, v := m.Content[2*i], m.Content[2*i+1]
			trailing := len(idx)-j == n-i
			if trailing && i == 0 {
				return false
			}
			var start, end int
			var ok1, ok2 bool
			if trailing {
				start, ok1 = e.valueEnd(m.Content[2*i-1])
				end, ok2 = e.valueEnd(v)
			} else {
				start, ok1 = e.offset(k)
				end, ok2 = e.offset(m.Content[2*i+2])
			}
			if !ok1 || !ok2 || k.Anchor != "" || v.Anchor != "" {
				return false
			}
			e.add(start, end, "")
		}
		return true
	}
	for _, i := range idx {
		k, v := m.Content[2*i], m.Content[2*i+1]
		if _, ok := e.keyStart(k); !ok || v.Anchor != "" {
			return false
		}
		end, ok := e.valueEnd(v)
		if isEmpty(v) && v.Kind == yaml.ScalarNode && v.Value == "" {
			end, ok = e.colonEnd(k)
		}
		if !ok || !e.restIsBlank(end) {
			return false
		}
		e.add(e.lines[k.Line-1], e.lineEnd(end), "")
	}
	return true
}

// offset returns the byte offset of node n. yaml.v3 counts columns in
// characters, not bytes.
func (e *editor) offset(n *yaml.Node) (int, bool) {
	if n.Line < 1 || n.Line > len(e.lines) || n.Column < 1 {
		return 0, false
	}
	at := e.lines[n.Line-1]
	for c := 1; c < n.Column; c++ {
		if at >= len(e.text) || e.text[at] == '\n' {
			return 0, false
		}
		_, size := utf8.DecodeRune(e.text[at:])
		at += size
	}
	return at, true
}

// keyStart returns the offset of a node that begins its line after
// indentation only, or false.
func (e *editor) keyStart(n *yaml.Node) (int, bool) {
	at, ok := e.offset(n)
	if !ok {
		return 0, false
	}
	for _, b := range e.text[e.lines[n.Line-1]:at] {
		if b != ' ' {
			return 0, false
		}
	}
	return at, true
}

// lineEnd returns the offset just past the newline of the line holding
// offset at (or the end of the text).
func (e *editor) lineEnd(at int) int {
	if i := bytes.IndexByte(e.text[at:], '\n'); i >= 0 {
		return at + i + 1
	}
	return len(e.text)
}

// restIsBlank reports whether the line from at on holds only white space
// or a comment.
func (e *editor) restIsBlank(at int) bool {
	rest := bytes.TrimLeft(e.text[at:e.lineEnd(at)], " \t")
	return len(rest) == 0 || rest[0] == '#' || rest[0] == '\n' || rest[0] == '\r'
}

// colonEnd returns the offset just past the colon that follows key k.
func (e *editor) colonEnd(k *yaml.Node) (int, bool) {
	_, end, ok := e.scalarSpan(k)
	if !ok {
		return 0, false
	}
	for end < len(e.text) && (e.text[end] == ' ' || e.text[end] == '\t') {
		end++
	}
	if end >= len(e.text) || e.text[end] != ':' {
		return 0, false
	}
	return end + 1, true
}

// scalarSpan finds the bytes of a plain or quoted scalar that sits on one
// line, and checks they read back as the node's value.
func (e *editor) scalarSpan(v *yaml.Node) (int, int, bool) {
	if v.Kind != yaml.ScalarNode || v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 || v.Style&yaml.TaggedStyle != 0 {
		return 0, 0, false
	}
	start, ok := e.offset(v)
	if !ok {
		return 0, 0, false
	}
	rest := e.text[start:e.lineEnd(start)]
	var n int
	switch {
	case v.Style&yaml.DoubleQuotedStyle != 0:
		n = quotedEnd(rest, '"')
	case v.Style&yaml.SingleQuotedStyle != 0:
		n = quotedEnd(rest, '\'')
	case v.Value != "" && bytes.HasPrefix(rest, []byte(v.Value)):
		n = len(v.Value)
	}
	end := start + n
	if n == 0 || end < len(e.text) && !isSpace(e.text[end]) && !strings.ContainsRune(",}]:", rune(e.text[end])) &&
		(e.text[end] != '#' || v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0) {
		return 0, 0, false // something glued to a plain value: not a span to replace
	}
	return start, end, true
}

func quotedEnd(rest []byte, q byte) int {
	if len(rest) == 0 || rest[0] != q {
		return 0
	}
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

// valueEnd returns the offset just past value v: a one-line scalar, a flow
// collection, or a block mapping ending in one of those.
func (e *editor) valueEnd(v *yaml.Node) (int, bool) {
	switch {
	case v.Kind == yaml.ScalarNode:
		_, end, ok := e.scalarSpan(v)
		return end, ok
	case v.Kind == yaml.MappingNode && isFlow(v), v.Kind == yaml.SequenceNode && isFlow(v):
		open, ok := e.offset(v)
		want := byte('}')
		if v.Kind == yaml.SequenceNode {
			want = ']'
		}
		if !ok || open >= len(e.text) || e.text[open] != want-2 { // '{' is '}'-2, '[' is ']'-2
			return 0, false
		}
		pos := open + 1
		if len(v.Content) > 0 {
			if pos, ok = e.valueEnd(v.Content[len(v.Content)-1]); !ok {
				return 0, false
			}
		}
		return e.closing(pos, want)
	case v.Kind == yaml.MappingNode && len(v.Content) > 0:
		return e.valueEnd(v.Content[len(v.Content)-1])
	}
	return 0, false
}

// closing skips white space, comments and one trailing comma from pos and
// returns the offset just past the closing bracket c.
func (e *editor) closing(pos int, c byte) (int, bool) {
	comma := false
	for pos < len(e.text) {
		switch b := e.text[pos]; {
		case b == c:
			return pos + 1, true
		case isSpace(b):
			pos++
		case b == ',' && !comma:
			comma = true
			pos++
		case b == '#':
			pos = e.lineEnd(pos)
		default:
			return 0, false
		}
	}
	return 0, false
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

// isEmpty reports whether v is an empty mapping or a null.
func isEmpty(v *yaml.Node) bool {
	return v.Kind == yaml.MappingNode && len(v.Content) == 0 ||
		v.Kind == yaml.ScalarNode && v.ShortTag() == yaml.NodeTagNull
}

func isFlow(n *yaml.Node) bool { return n.Style&yaml.FlowStyle != 0 }

func child(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

func indexOf(m *yaml.Node, k *yaml.Node) int {
	for i := 0; i < len(m.Content); i += 2 {
		if m.Content[i] == k {
			return i / 2
		}
	}
	return -1
}

func isBlank(b []byte) bool { return len(bytes.TrimLeft(b, " \t")) == 0 }

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }
