package stream

import (
	"bytes"
	"encoding/base64"
	"unicode/utf8"

	"github.com/confighash/confighash/hashing"
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
func scanConfig(text []byte) (hashing.Content, bool) {
	c := &config{Content: hashing.Content{Keys: map[string]hashing.Digest{}}}
	if bytes.Contains(text, []byte("needsHashSuffix")) || bytes.IndexByte(text, '\r') >= 0 || !printable(text) {
		return c.Content, false
	}
	s := scanner{lines: splitLines(text)}
	var apiVersion string
	fields := map[string]bool{}
	for s.i < len(s.lines) {
		line := s.lines[s.i]
		if skippable(line) {
			s.i++
			continue
		}
		if indentOf(line) != 0 {
			return c.Content, false
		}
		key, rest, ok := splitKey(line)
		if !ok || fields[key] {
			return c.Content, false
		}
		fields[key] = true
		s.i++
		switch key {
		case "apiVersion":
			apiVersion, ok = plainScalar(rest)
		case "kind":
			var kind string
			kind, ok = plainScalar(rest)
			c.Kind = hashing.Kind(kind)
		case "type":
			_, ok = plainScalar(rest)
		case "immutable":
			v := string(bytes.TrimSpace(stripComment(rest)))
			ok = v == "true" || v == "false"
		case "metadata":
			ok = isEmptyValue(rest) && s.metadata(c)
		case "data", "binaryData", "stringData":
			ok = isEmptyValue(rest) && s.mapping(0, func(k string, v []byte) bool { return c.add(key, k, v) })
		default:
			ok = false
		}
		if !ok {
			return c.Content, false
		}
	}
	ok := apiVersion == "v1" && (c.Kind == hashing.KindConfigMap || c.Kind == hashing.KindSecret) && c.Name != ""
	return c.Content, ok && c.finish()
}

// config collects a ConfigMap's or Secret's keys per field, then merges them
// with the API server's rules.
type config struct {
	hashing.Content
	fields [3]map[string][]byte // data, binaryData, stringData
}

var fieldIndex = map[string]int{"data": 0, "binaryData": 1, "stringData": 2}

func (c *config) add(field, key string, value []byte) bool {
	i := fieldIndex[field]
	if c.fields[i] == nil {
		c.fields[i] = map[string][]byte{}
	}
	c.fields[i][key] = value
	return true
}

// finish decodes and merges the fields: a Secret's data and any binaryData
// are base64; a Secret's stringData replaces data; a ConfigMap key may not
// be in both data and binaryData. It refuses what the parser path would
// report as an error, so that path reports it.
func (c *config) finish() bool {
	data, binary, str := c.fields[0], c.fields[1], c.fields[2]
	secret := c.Kind == hashing.KindSecret
	if (secret && binary != nil) || (!secret && str != nil) {
		return false // not a field of this kind: let the parser path decide
	}
	for k, v := range data {
		if secret {
			raw, err := base64.StdEncoding.DecodeString(string(v))
			if err != nil {
				return false
			}
			v = raw
		}
		c.Keys[k] = hashing.DigestOf(v)
	}
	for k, v := range binary {
		raw, err := base64.StdEncoding.DecodeString(string(v))
		if _, dup := c.Keys[k]; err != nil || dup {
			return false
		}
		c.Keys[k] = hashing.DigestOf(raw)
	}
	for k, v := range str {
		c.Keys[k] = hashing.DigestOf(v)
	}
	return true
}

type scanner struct {
	lines [][]byte
	i     int
}

// childIndent returns the indentation of the next line that is not blank or
// a comment: the indentation of a nested block, or 0 when there is none.
func (s *scanner) childIndent() int {
	for j := s.i; j < len(s.lines); j++ {
		if !skippable(s.lines[j]) {
			return indentOf(s.lines[j])
		}
	}
	return 0
}

// metadata reads name and namespace and checks that every other field is a
// map of single-line scalars (labels, annotations) or a scalar.
func (s *scanner) metadata(c *config) bool {
	if s.childIndent() <= 0 {
		return false
	}
	return s.entries(0, func(ind int, key string, rest []byte) bool {
		var ok bool
		switch {
		case key == "name":
			c.Name, ok = plainScalar(rest)
		case key == "namespace":
			c.Namespace, ok = plainScalar(rest)
		case key == "labels" || key == "annotations" || isEmptyValue(rest):
			ok = isEmptyValue(rest) && s.mapping(ind, func(string, []byte) bool { return true })
		default:
			_, ok = scalarValue(rest)
		}
		return ok
	})
}

// mapping reads a block mapping of string values nested under a key at
// indentation outer, calling add for each entry.
func (s *scanner) mapping(outer int, add func(key string, value []byte) bool) bool {
	return s.entries(outer, func(ind int, key string, rest []byte) bool {
		if isBlockIndicator(rest) {
			value, ok := s.literal(rest, ind)
			return ok && add(key, value)
		}
		v, ok := scalarValue(rest)
		return ok && s.nextIsNotDeeper(ind) && add(key, []byte(v))
	})
}

// entries walks the block mapping nested under a key at indentation outer:
// every entry must sit at one indentation and have a new key; entry reads
// the rest of the entry's line and any lines nested under it. A null map
// has no entries.
func (s *scanner) entries(outer int, entry func(ind int, key string, rest []byte) bool) bool {
	ind := s.childIndent()
	if ind <= outer {
		return true
	}
	seen := map[string]bool{}
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
		if !ok || seen[key] {
			return false
		}
		seen[key] = true
		s.i++
		if !entry(ind, key, rest) {
			return false
		}
	}
	return true
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
// indentation parent.
func (s *scanner) literal(indicator []byte, parent int) ([]byte, bool) {
	chomp := byte(0)
	if ind := bytes.TrimSpace(stripComment(indicator)); len(ind) == 2 {
		chomp = ind[1]
	}
	var lines [][]byte
	content := -1
	for ; s.i < len(s.lines); s.i++ {
		line := s.lines[s.i]
		blank := len(bytes.Trim(line, " ")) == 0
		if bytes.IndexByte(line, '\t') >= 0 && indentTab(line) {
			return nil, false
		}
		if blank {
			lines = append(lines, line)
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
				return nil, false // less indented than the block, but not out of it
			}
			break
		}
		lines = append(lines, line)
	}
	// Blank lines after the block belong to the chomping; give back the
	// ones the next key needs to see as skippable.
	size := 0
	for _, l := range lines {
		size += len(l) + 1
	}
	out := make([]byte, 0, size)
	trailing := 0
	started := false
	for _, l := range lines {
		if len(bytes.Trim(l, " ")) == 0 {
			if content >= 0 && len(l) > content {
				if !started {
					return nil, false // a leading blank line deeper than the content
				}
				out = append(out, l[content:]...)
				out = append(out, '\n')
				trailing = 0
				continue
			}
			out = append(out, '\n')
			trailing++
			continue
		}
		out = append(out, l[content:]...)
		out = append(out, '\n')
		trailing = 0
		started = true
	}
	if content < 0 {
		// No content lines: empty, unless "|+" keeps blank lines, which
		// the parser path handles.
		return []byte{}, chomp != '+' || len(lines) == 0
	}
	switch chomp {
	case '-':
		out = bytes.TrimRight(out, "\n")
	case '+':
	default:
		out = out[:len(out)-trailing]
	}
	return out, true
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

// splitLines cuts text into lines without their line ends; a "\r\n" text is
// refused by the caller's checks (a '\r' is not plain-safe here).
func splitLines(text []byte) [][]byte {
	lines := bytes.Split(text, []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	return lines
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

// splitKey reads "key:" or "key: rest" where key is a plain scalar made of
// the characters ConfigMap keys and field names use.
func splitKey(line []byte) (string, []byte, bool) {
	i := 0
	for i < len(line) && isKeyByte(line[i]) {
		i++
	}
	if i == 0 || i >= len(line) || line[i] != ':' {
		return "", nil, false
	}
	rest := line[i+1:]
	if len(rest) > 0 && rest[0] != ' ' {
		return "", nil, false
	}
	key := string(line[:i])
	if key[0] == '-' || key[0] == '.' && len(key) == 1 {
		return "", nil, false
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

// plainScalar reads a value that must be a plain string (names, kinds).
func plainScalar(rest []byte) (string, bool) {
	v, ok := scalarValue(rest)
	return v, ok && v != ""
}

// scalarValue reads a single-line scalar that YAML resolves to a string:
// plain, single-quoted, or double-quoted without escapes.
func scalarValue(rest []byte) (string, bool) {
	v := bytes.TrimSpace(rest)
	if len(v) == 0 || bytes.IndexByte(v, '\t') >= 0 || bytes.IndexByte(v, '\r') >= 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		end := bytes.IndexByte(v[1:], '"')
		if end < 0 || bytes.IndexByte(v[:end+1], '\\') >= 0 || !isEmptyValue(v[end+2:]) {
			return "", false
		}
		return string(v[1 : end+1]), true
	case '\'':
		return singleQuoted(v)
	}
	v = bytes.TrimRight(stripComment(v), " ")
	if !plainString(v) {
		return "", false
	}
	return string(v), true
}

func singleQuoted(v []byte) (string, bool) {
	var out []byte
	for i := 1; i < len(v); i++ {
		if v[i] != '\'' {
			out = append(out, v[i])
			continue
		}
		if i+1 < len(v) && v[i+1] == '\'' {
			out = append(out, '\'')
			i++
			continue
		}
		return string(out), isEmptyValue(v[i+1:])
	}
	return "", false
}

// nonStrings are plain scalars some YAML reader could take for a null, a
// boolean or a number.
var nonStrings = [][]byte{[]byte("null"), []byte("true"), []byte("false"), []byte("yes"), []byte("no"), []byte("on"), []byte("off"), []byte("y"), []byte("n")}

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
	for _, word := range nonStrings {
		if bytes.EqualFold(v, word) {
			return false
		}
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
// printable Unicode ranges), so that the parser would not refuse it.
func printable(text []byte) bool {
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return false
		case r == '\t' || r == '\n' || (r >= 0x20 && r <= 0x7e) || r == 0x85,
			r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd && r != 0xfeff, r >= 0x10000 && r <= 0x10ffff:
		default:
			return false
		}
		i += size
	}
	return true
}
