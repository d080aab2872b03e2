package postrenderer

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/yaml11"
)

// scanConfig reads a ConfigMap or Secret written in the plain block layout
// that kubectl, Helm and kustomize emit, without building a YAML tree: the
// payload is hashed straight from the bytes. It accepts a strict subset of
// YAML and returns ok=false for anything outside it (flow style, folded or
// indented-indicator block scalars, escapes, anchors, tabs, values YAML
// would not read as strings, unknown fields, kustomize generator markers);
// the caller then parses the document with yaml.v3, which also reports any
// error. Whatever it accepts, it reads exactly as yaml.v3 would (the
// FuzzScanConfig test holds it to that).
func scanConfig(text []byte, buf *scanBuffers) (hashing.Content, bool) {
	// The lines are read without their line feeds: a document that does
	// not end with one (the last of a stream saved without a final
	// newline) would give a block scalar that ends it a line feed YAML
	// does not read there.
	if bytes.Contains(text, []byte("needsHashSuffix")) || bytes.IndexByte(text, '\r') >= 0 || !bytes.HasSuffix(text, []byte("\n")) || !printable(text) {
		return hashing.Content{}, false
	}
	buf.lines = splitLines(buf.lines[:0], text)
	s := &scanner{lines: buf.lines, buf: buf}
	kind := s.topLevelKind()
	if kind != hashing.KindConfigMap && kind != hashing.KindSecret {
		return hashing.Content{}, false
	}
	buf.content.Reset(kind)
	c := &config{buf: buf}
	var apiVersion []byte
	ok := s.entries(-1, func(_ int, key, rest []byte) bool {
		var ok bool
		switch string(key) {
		case "apiVersion":
			apiVersion, ok = plainScalar(rest)
		case "kind":
			_, ok = plainScalar(rest) // kind was read by topLevelKind
		case "type":
			// A Secret the cluster fills in is left to the parser path,
			// which leaves it out of the configs (hashing.ClusterFilled).
			var t []byte
			t, ok = plainScalar(rest)
			ok = ok && string(t) != hashing.ServiceAccountTokenType
		case "immutable":
			v := string(bytes.TrimSpace(stripComment(rest)))
			ok = v == "true" || v == "false"
		case "metadata":
			ok = isEmptyValue(rest) && s.metadata(c)
		case "data", "binaryData", "stringData":
			field := string(key)
			ok = isEmptyValue(rest) && s.mapping(0, func(k, v []byte) bool { return c.add(field, k, v) })
		}
		return ok
	})
	content := buf.content.Done()
	content.Namespace, content.Name = c.namespace, c.name
	return content, ok && string(apiVersion) == "v1" && c.name != ""
}

// config is the document being scanned: its identity, and its content fed
// to hashing.ContentBuilder, which holds the API server's rules.
type config struct {
	namespace, name string
	buf             *scanBuffers
}

// scanBuffers are reused from one document to the next.
type scanBuffers struct {
	lines   [][]byte
	value   []byte // assembled block scalars
	content hashing.ContentBuilder
}

// add records one key of data, binaryData or stringData. It refuses what
// the builder calls an error (a field the kind does not have included) and
// a key kubectl would store under another name (yaml11.PlainKey): the
// parser path then decides, and reports it.
func (c *config) add(field string, key, value []byte) bool {
	if mayResolve(key[0]) && yaml11.PlainKey(string(key)) != yaml11.String {
		return false
	}
	return c.buf.content.Add(hashing.Field(field), string(key), value) == nil
}

// mayResolve reports whether a plain scalar starting with c can be anything
// but a string to some YAML reader (the first characters go-yaml's resolver
// looks further at); yaml11 decides for those.
func mayResolve(c byte) bool {
	return c >= '0' && c <= '9' || strings.IndexByte("+-.~yYnNtTfFoO", c) >= 0
}

type scanner struct {
	lines [][]byte
	i     int
	buf   *scanBuffers
}

// topLevelKind finds the document's kind first, so that values can be
// decoded and hashed as they are read, whatever the order of the fields.
func (s *scanner) topLevelKind() hashing.Kind {
	for _, line := range s.lines {
		if rest, ok := bytes.CutPrefix(line, []byte("kind:")); ok {
			v, _ := plainScalar(rest)
			return hashing.Kind(v)
		}
	}
	return ""
}

// childIndent returns the indentation of the next line that is not blank or
// a comment, or -1 at the end.
func (s *scanner) childIndent() int {
	for j := s.i; j < len(s.lines); j++ {
		if !skippable(s.lines[j]) {
			return indentOf(s.lines[j])
		}
	}
	return -1
}

// metadata reads name and namespace and checks that labels and annotations
// are maps of strings and every other field a scalar.
func (s *scanner) metadata(c *config) bool {
	if s.childIndent() <= 0 {
		return false
	}
	return s.entries(0, func(ind int, key, rest []byte) bool {
		var ok bool
		switch k := string(key); {
		case k == "name":
			var v []byte
			v, ok = plainScalar(rest)
			c.name = string(v)
		case k == "namespace":
			var v []byte
			v, ok = plainScalar(rest)
			c.namespace = string(v)
		case k == "labels" || k == "annotations":
			// A ConfigMap the cluster fills in is left to the parser
			// path, as a token Secret is: a label or annotation that
			// can mark it, whatever its value (hashing.ClusterFilled).
			notMarker := notAnnotationMarker
			if k == "labels" {
				notMarker = notLabelMarker
			}
			ok = isEmptyValue(rest) && s.mapping(ind, notMarker)
		case isEmptyValue(rest):
			ok = s.mapping(ind, func(_, _ []byte) bool { return true })
		default:
			_, ok = scalarValue(rest)
		}
		return ok
	})
}

// notAnnotationMarker and notLabelMarker accept an annotation or a label
// that cannot make a config one the cluster fills in.
func notAnnotationMarker(name, _ []byte) bool {
	return !hashing.ClusterFilledMarker(false, string(name))
}

func notLabelMarker(name, _ []byte) bool {
	return !hashing.ClusterFilledMarker(true, string(name))
}

// mapping reads a block mapping of string values nested under a key at
// indentation outer, calling add for each entry. The value passed to add is
// only valid during the call.
func (s *scanner) mapping(outer int, add func(key, value []byte) bool) bool {
	return s.entries(outer, func(ind int, key, rest []byte) bool {
		if isBlockIndicator(rest) {
			value, ok := s.literal(rest, ind)
			return ok && add(key, value)
		}
		v, ok := scalarValue(rest)
		return ok && s.nextIsNotDeeper(ind) && add(key, v)
	})
}

// entries walks the block mapping nested under a key at indentation outer
// (-1 for the document itself): every entry must sit at one indentation and
// have a new key; entry reads the rest of the entry's line and any lines
// nested under it. A null map has no entries.
func (s *scanner) entries(outer int, entry func(ind int, key, rest []byte) bool) bool {
	ind := s.childIndent()
	if ind <= outer {
		return true
	}
	var seenBuf [16][]byte
	seen := seenBuf[:0]
	for s.i < len(s.lines) {
		line := s.lines[s.i]
		if skippable(line) {
			s.i++
			continue
		}
		if indentOf(line) < ind {
			return true
		}
		if indentOf(line) != ind {
			return false
		}
		key, rest, ok := splitKey(line[ind:])
		if !ok || containsBytes(seen, key) {
			return false
		}
		seen = append(seen, key)
		s.i++
		if !entry(ind, key, rest) {
			return false
		}
	}
	return true
}

func containsBytes(list [][]byte, b []byte) bool {
	for _, v := range list {
		if bytes.Equal(v, b) {
			return true
		}
	}
	return false
}

// nextIsNotDeeper refuses a plain scalar continued on the next lines.
func (s *scanner) nextIsNotDeeper(parent int) bool {
	for j := s.i; j < len(s.lines); j++ {
		if len(bytes.TrimSpace(s.lines[j])) == 0 {
			continue
		}
		return indentOf(s.lines[j]) <= parent
	}
	return true
}

// literal reads a literal block scalar ("|", "|-", "|+") whose key sits at
// indentation parent. The result lives in the scanner's reused buffer.
func (s *scanner) literal(indicator []byte, parent int) ([]byte, bool) {
	chomp := byte(0)
	if ind := bytes.TrimSpace(stripComment(indicator)); len(ind) == 2 {
		chomp = ind[1]
	}
	first, content, ok := s.blockLines(parent)
	if !ok {
		return nil, false
	}
	lines := s.lines[first:s.i]
	if content < 0 {
		// No content lines: empty, unless "|+" keeps blank lines, which
		// the parser path handles.
		return s.buf.value[:0], chomp != '+' || len(lines) == 0
	}
	out := s.buf.value[:0]
	trailing := 0
	started := false
	for _, l := range lines {
		if len(bytes.Trim(l, " ")) == 0 && len(l) <= content {
			out = append(out, '\n')
			trailing++
			continue
		}
		if len(bytes.Trim(l, " ")) == 0 && !started {
			return nil, false // a leading blank line deeper than the content
		}
		out = append(out, l[content:]...)
		out = append(out, '\n')
		trailing = 0
		started = true
	}
	s.buf.value = out
	switch chomp {
	case '-':
		out = bytes.TrimRight(out, "\n")
	case '+':
	default:
		out = out[:len(out)-trailing]
	}
	return out, true
}

// blockLines advances past the lines of a block scalar whose key sits at
// indentation parent, and returns where they start and the content
// indentation (-1 when there is no content line).
func (s *scanner) blockLines(parent int) (first, content int, ok bool) {
	first, content = s.i, -1
	for ; s.i < len(s.lines); s.i++ {
		line := s.lines[s.i]
		if indentTab(line) {
			return 0, 0, false
		}
		if len(bytes.Trim(line, " ")) == 0 {
			continue
		}
		ind := indentOf(line)
		if content < 0 {
			if ind <= parent {
				break
			}
			content = ind
		}
		if ind < content {
			if ind > parent {
				return 0, 0, false // less indented than the block, but not out of it
			}
			break
		}
	}
	return first, content, true
}

func indentTab(line []byte) bool {
	for _, b := range line {
		switch b {
		case ' ':
			continue
		case '\t':
			return true
		}
		return false
	}
	return false
}

// splitLines appends the lines of text, without their line feeds, to dst.
func splitLines(dst [][]byte, text []byte) [][]byte {
	for len(text) > 0 {
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			return append(dst, text)
		}
		dst = append(dst, text[:i])
		text = text[i+1:]
	}
	return dst
}

// skippable: blank lines, comments, and the document's "---" line.
func skippable(line []byte) bool {
	t := bytes.TrimLeft(line, " ")
	return len(t) == 0 || t[0] == '#' || (len(t) == len(line) && isMarker(line, "---") && len(bytes.TrimSpace(line[3:])) == 0)
}

func indentOf(line []byte) int {
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	return n
}

// maxKey is the longest key splitKey reads. YAML takes a key written
// without "? " only within 1024 characters of its start (yaml.v3 refuses a
// longer one); a long key is left to the parser, with margin.
const maxKey = 1000

// splitKey reads "key:" or "key: rest" where key is a plain scalar made of
// the characters ConfigMap keys and field names use, at most maxKey long.
func splitKey(line []byte) ([]byte, []byte, bool) {
	i := 0
	for i < len(line) && isKeyByte(line[i]) {
		i++
	}
	if i == 0 || i > maxKey || i >= len(line) || line[i] != ':' {
		return nil, nil, false
	}
	rest := line[i+1:]
	if len(rest) > 0 && rest[0] != ' ' {
		return nil, nil, false
	}
	key := line[:i]
	if key[0] == '-' || (key[0] == '.' && len(key) == 1) {
		return nil, nil, false
	}
	return key, rest, true
}

func isKeyByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_' || b == '.' || b == '/'
}

func stripComment(rest []byte) []byte {
	if i := bytes.Index(rest, []byte(" #")); i >= 0 {
		return rest[:i]
	}
	return rest
}

func isEmptyValue(rest []byte) bool { return len(bytes.TrimSpace(stripComment(rest))) == 0 }

func isBlockIndicator(rest []byte) bool {
	v := string(bytes.TrimSpace(stripComment(rest)))
	return v == "|" || v == "|-" || v == "|+"
}

// plainScalar reads a value that must be a non-empty string (names, kinds).
func plainScalar(rest []byte) ([]byte, bool) {
	v, ok := scalarValue(rest)
	return v, ok && len(v) > 0
}

// scalarValue reads a single-line scalar that YAML resolves to a string:
// plain, single-quoted, or double-quoted without escapes. The result may
// share memory with the line.
func scalarValue(rest []byte) ([]byte, bool) {
	v := bytes.TrimSpace(rest)
	if len(v) == 0 || bytes.IndexByte(v, '\t') >= 0 {
		return nil, false
	}
	switch v[0] {
	case '"':
		end := bytes.IndexByte(v[1:], '"')
		if end < 0 || bytes.IndexByte(v[:end+1], '\\') >= 0 || !isEmptyValue(v[end+2:]) {
			return nil, false
		}
		return v[1 : end+1], true
	case '\'':
		return singleQuoted(v)
	}
	v = bytes.TrimRight(stripComment(v), " ")
	if !plainString(v) {
		return nil, false
	}
	return v, true
}

func singleQuoted(v []byte) ([]byte, bool) {
	end := 1
	for end < len(v) {
		if v[end] == '\'' {
			if end+1 < len(v) && v[end+1] == '\'' {
				end += 2
				continue
			}
			break
		}
		end++
	}
	if end >= len(v) || !isEmptyValue(v[end+1:]) {
		return nil, false
	}
	inner := v[1:end]
	if bytes.Contains(inner, []byte("''")) {
		inner = bytes.ReplaceAll(inner, []byte("''"), []byte("'"))
	}
	return inner, true
}

// plainString accepts plain scalars that YAML reads as strings and that
// cannot start or continue another construct; anything doubtful goes to the
// parser.
func plainString(v []byte) bool {
	if len(v) == 0 || bytes.Contains(v, []byte(": ")) || bytes.HasSuffix(v, []byte(":")) {
		return false
	}
	switch v[0] {
	case '-', '+', '.', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', '#', '?', ':', ',', '~':
		return false
	}
	if v[0] >= '0' && v[0] <= '9' {
		return false
	}
	if mayResolve(v[0]) && yaml11.Plain(string(v)) != yaml11.String {
		return false // a null, boolean or number to kubectl or yaml.v3
	}
	for _, b := range v {
		if b == '\t' || b < 0x20 {
			return false
		}
	}
	return true
}

// printable reports whether text is valid UTF-8 made only of the characters
// YAML allows in a stream (tab and line feed, printable ASCII, and the
// printable Unicode ranges), so that the parser would not refuse it, less
// the line breaks of YAML 1.1 the scanner does not break lines at (U+0085,
// U+2028, U+2029): yaml.v3 and kubectl's reader do.
func printable(text []byte) bool {
	for i := 0; i < len(text); {
		// ASCII, nearly all of a manifest, without decoding a rune.
		if c := text[i]; c < utf8.RuneSelf {
			if c != '\t' && c != '\n' && (c < 0x20 || c > 0x7e) {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return false
		case r == 0x85 || r == 0x2028 || r == 0x2029:
			return false
		case r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd && r != 0xfeff, r >= 0x10000 && r <= 0x10ffff:
		default:
			return false
		}
		i += size
	}
	return true
}
