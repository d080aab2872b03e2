package yamlnode

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// A document of a stream is parsed on its own, so yaml.v3 counts its lines
// from the document's first line. The tools name lines of the file, which a
// user opens in an editor: ShiftLines and ShiftErrorLine move a document's
// lines by the lines of the stream before it.

// LineOf returns the line (counted from 1) on which byte offset of input
// starts.
func LineOf(input []byte, offset int) int {
	return bytes.Count(input[:offset], []byte{'\n'}) + 1
}

// ShiftLines adds by to the line of n and of every node below it. Aliases
// are not followed: what they refer to is in the tree.
func ShiftLines(n *yaml.Node, by int) {
	if n == nil || by == 0 {
		return
	}
	n.Line += by
	for _, c := range n.Content {
		ShiftLines(c, by)
	}
}

// CopyLines gives dst, a tree parsed from text written from src (or from
// another cut of the same text), the lines of src: node for node, mapping
// entries matched by key and sequence items by position. A node of dst
// that src does not have (an annotation added on the way) keeps its line.
func CopyLines(dst, src *yaml.Node) {
	if dst == nil || src == nil {
		return
	}
	if src.Kind == yaml.AliasNode && src.Alias != nil && dst.Kind != yaml.AliasNode {
		src = src.Alias
	}
	dst.Line = src.Line
	switch {
	case dst.Kind == yaml.MappingNode && src.Kind == yaml.MappingNode:
		// The keys are in the same order but where a key was added: each
		// is looked for where the last one matched, then from the start.
		next := 0
		for i := 0; i+1 < len(dst.Content); i += 2 {
			j := keyAt(src.Content, dst.Content[i].Value, next)
			if j < 0 {
				continue
			}
			CopyLines(dst.Content[i], src.Content[j])
			CopyLines(dst.Content[i+1], src.Content[j+1])
			next = j + 2
		}
	case dst.Kind == src.Kind && len(dst.Content) == len(src.Content):
		for i := range dst.Content {
			CopyLines(dst.Content[i], src.Content[i])
		}
	}
}

// keyAt returns the index in content, a mapping's, of key, looked for from
// from on and then from the start; -1 when it is none of its keys.
func keyAt(content []*yaml.Node, key string, from int) int {
	for _, start := range [2]int{from, 0} {
		for j := start; j+1 < len(content); j += 2 {
			if content[j].Value == key {
				return j
			}
		}
	}
	return -1
}

// EditorNodeLines turns the lines of n and of every node below it, parsed
// from text, from yaml.v3's into an editor's (see EditorLines), for a tree
// no byte edit is placed by. Aliases are not followed, as by ShiftLines.
func EditorNodeLines(n *yaml.Node, text []byte) {
	if !hasHiddenBreak(text) {
		return
	}
	table := editorLines(text)
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		n.Line = editorLine(table, n.Line)
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
}

// hasHiddenBreak reports whether text holds a line break yaml.v3 counts
// and an editor does not (a NEL, LS or PS, or a lone carriage return):
// without one, the two count lines alike.
func hasHiddenBreak(text []byte) bool { return HasLoneCR(text) || HasUnicodeBreak(text) }

// editorLines returns the line an editor shows each of yaml.v3's lines of
// text on: at index i, that of yaml.v3's line i+1.
func editorLines(text []byte) []int {
	table := []int{1}
	line := 1
	for i := 0; i < len(text); {
		size := yamlBreak(text[i:])
		if size == 0 {
			i++
			continue
		}
		if text[i] == '\n' || size == 2 && text[i] == '\r' {
			line++
		}
		i += size
		table = append(table, line)
	}
	return table
}

// editorLine returns the editor's line for yaml.v3's line in table; a line
// the table does not hold (none, 0) as it is.
func editorLine(table []int, line int) int {
	if line < 1 || line > len(table) {
		return line
	}
	return table[line-1]
}

// LineError is an error that names lines of the input: one ("line 3:
// ...") or two ("... (lines 3 and 5) ..."). The lines are numbers kept
// apart from the text around them, which may quote a key of the input
// (`key "line 3:" appears twice`): ShiftErrorLine and EditorLines move
// the lines and never read the text.
type LineError struct {
	// parts is the text around the lines: parts[0], lines[0], parts[1],
	// and so on; one more part than lines.
	parts []string
	lines []int
	// nodes says the lines are yaml.v3's, as a node holds them, which
	// counts a NEL, LS, PS or lone carriage return as a line break
	// (EditorLines turns them into an editor's).
	nodes bool
	// bare is the message without its lines (WithoutNodeLines).
	bare string
	err  error
}

// AtLine returns err as found at line, counted as an editor counts lines
// (LineOf): "line N: " and err's message. It wraps err.
func AtLine(line int, err error) error {
	return &LineError{parts: []string{"line ", ": " + err.Error()}, lines: []int{line}, bare: err.Error(), err: err}
}

// AtNodeLine returns "line N: msg" for line as a yaml.v3 node holds it.
func AtNodeLine(line int, msg string) error {
	return &LineError{parts: []string{"line ", ": " + msg}, lines: []int{line}, nodes: true, bare: msg}
}

// AtNodeLines returns before, " (lines F and S)", after, for lines as
// yaml.v3 nodes hold them.
func AtNodeLines(before string, first, second int, after string) error {
	return &LineError{parts: []string{before + " (lines ", " and ", ")" + after}, lines: []int{first, second}, nodes: true, bare: before + after}
}

func (e *LineError) Error() string {
	var b strings.Builder
	for i, l := range e.lines {
		b.WriteString(e.parts[i])
		b.WriteString(strconv.Itoa(l))
	}
	b.WriteString(e.parts[len(e.lines)])
	return b.String()
}

func (e *LineError) Unwrap() error { return e.err }

// relocate returns err, which is le or wraps it, as one LineError: the
// text of err's message around le's lines, each line mapped by f. It
// returns nil when err's message does not hold le's.
func relocate(err error, le *LineError, f func(int) int) *LineError {
	moved := &LineError{parts: slices.Clone(le.parts), lines: make([]int, len(le.lines)), nodes: le.nodes, bare: le.bare, err: le.err}
	for i, l := range le.lines {
		moved.lines[i] = f(l)
	}
	if e, ok := err.(*LineError); ok && e == le { //nolint:errorlint // is err le itself, not one it wraps
		return moved
	}
	msg, inner := err.Error(), le.Error()
	i := strings.LastIndex(msg, inner)
	if i < 0 {
		return nil
	}
	moved.parts[0] = msg[:i] + moved.parts[0]
	moved.parts[len(moved.parts)-1] += msg[i+len(inner):]
	return moved
}

// EditorLines returns err with the node lines of a LineError it holds
// turned into lines as an editor counts them in text, the text the nodes
// were parsed from (their lines not yet shifted). Other errors, lines
// already an editor's, and errors about a text where the two count alike
// are returned as they are.
func EditorLines(text []byte, err error) error {
	if err == nil {
		return nil // before le, which escapes to the heap
	}
	var le *LineError
	if !errors.As(err, &le) || !le.nodes || !hasHiddenBreak(text) {
		return err
	}
	table := editorLines(text)
	moved := relocate(err, le, func(line int) int { return editorLine(table, line) })
	if moved == nil {
		return err
	}
	moved.nodes = false
	return moved
}

// WithoutNodeLines returns err without the lines of a LineError it holds
// that names lines as yaml.v3's nodes hold them, for a text the user does
// not see (the ResourceList kustomize or kpt pipes to a function, the
// documents Helm 4 writes anew for its post-renderer): the rest of the
// message names the object, the field or the key. Other errors, and lines
// of the user's own text (a syntax error's), are returned as they are.
func WithoutNodeLines(err error) error {
	if err == nil {
		return nil // before le, which escapes to the heap
	}
	var le *LineError
	if !errors.As(err, &le) || !le.nodes {
		return err
	}
	msg, inner := err.Error(), le.Error()
	i := strings.LastIndex(msg, inner)
	if i < 0 {
		return err
	}
	return &bareError{msg: msg[:i] + le.bare + msg[i+len(inner):], err: le.err}
}

// bareError is a message whose lines were left out, wrapping what the
// LineError wrapped.
type bareError struct {
	msg string
	err error
}

func (e *bareError) Error() string { return e.msg }
func (e *bareError) Unwrap() error { return e.err }

// ShiftErrorLine returns err with the lines of a LineError it holds moved
// by by lines, as numbers: the result's message is err's, and it unwraps to
// what the LineError wrapped. The lines are then the stream's, not
// yaml.v3's of the document (EditorLines comes first). Any other error
// names no line (yaml.v3's syntax errors are made LineErrors by
// ParseError) and is returned as it is: its text may quote a key of the
// input that reads like a line, `data.line 3:`, which is not one.
func ShiftErrorLine(err error, by int) error {
	if err == nil || by == 0 {
		return err
	}
	var le *LineError
	if !errors.As(err, &le) {
		return err
	}
	moved := relocate(err, le, func(line int) int { return line + by })
	if moved == nil {
		return err
	}
	moved.nodes = false
	return moved
}
