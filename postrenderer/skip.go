package postrenderer

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// header is what a line scan of a document's top level found: its apiVersion
// and kind, when both are plain top-level scalars written once.
type header struct {
	apiVersion, kind string
}

// readHeader scans the top-level lines of a document (those that start in
// the first column) for apiVersion and kind. It gives up, and the document
// is parsed, on anything a line scan cannot judge: a flow or JSON document, a
// top-level key that is not a plain word, a tag, anchor, alias or merge key,
// a directive, a document end marker, a key written twice, a tab, or bytes
// that are not UTF-8 text YAML allows.
func readHeader(text []byte) (header, bool) {
	var h header
	if !yamlText(text) {
		return h, false
	}
	var seen [][]byte
	afterHeader := false // the line before held apiVersion or kind
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		if len(line) == 0 || line[0] == ' ' && !afterHeader {
			continue // blank, or indented under a key that is not the header's
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if line[0] == ' ' && afterHeader {
			return h, false // an indented line may continue the value
		}
		if line[0] == ' ' || line[0] == '#' {
			continue
		}
		afterHeader = false
		if isMarker(line, "---") {
			if len(bytes.TrimSpace(stripComment(line[3:]))) > 0 {
				return h, false // "--- {a: b}": content on the marker line
			}
			continue
		}
		key, rest, ok := splitKey(line)
		if !ok || !plainKey(key) || containsBytes(seen, key) {
			return h, false
		}
		seen = append(seen, key)
		value := bytes.TrimSpace(stripComment(rest))
		switch string(key) {
		case "apiVersion", "kind":
			v, ok := headerValue(value)
			if !ok {
				return h, false
			}
			afterHeader = true
			if key[0] == 'k' {
				h.kind = v
			} else {
				h.apiVersion = v
			}
		default:
			if len(value) > 0 && (value[0] == '&' || value[0] == '*' || value[0] == '!') {
				return h, false
			}
		}
	}
	return h, h.apiVersion != "" && h.kind != ""
}

// plainKey reports whether a top-level key is a plain word: letters, digits
// and "-_./", which YAML reads as the same string and no merge key (<<) is.
func plainKey(key []byte) bool {
	if len(key) == 0 {
		return false
	}
	for _, b := range key {
		if !isKeyByte(b) {
			return false
		}
	}
	return true
}

// headerValue reads an apiVersion or kind value written plain or quoted,
// made of the characters those fields hold.
func headerValue(v []byte) (string, bool) {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	if !plainKey(v) || v[0] == '-' || v[0] == '.' {
		return "", false
	}
	return string(v), true
}

// yamlText reports whether text is UTF-8 without the control characters
// YAML forbids (every C0 character but tab, LF and CR, and DEL), and without
// a tab that starts a line, which YAML forbids in indentation.
func yamlText(text []byte) bool {
	if !utf8.Valid(text) {
		return false
	}
	// Eight bytes at a time: a word with no byte below 0x20 and none equal
	// to 0x7f cannot hold anything to reject. Most words of a manifest pass
	// this test; a word with a line end, a tab or a control character is
	// looked at byte by byte.
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(text); i += 8 {
		w := binary.LittleEndian.Uint64(text[i:])
		del := w ^ (ones * 0x7f)
		if (w-ones*0x20)&^w&highs == 0 && (del-ones)&^del&highs == 0 {
			continue
		}
		for j := i; j < i+8; j++ {
			if !yamlByte(text, j) {
				return false
			}
		}
	}
	for ; i < len(text); i++ {
		if !yamlByte(text, i) {
			return false
		}
	}
	return true
}

// yamlByte reports whether the byte at text[i] may stand there in YAML text:
// not a control character other than tab, LF and CR, not DEL, and not a tab
// that starts a line.
func yamlByte(text []byte, i int) bool {
	switch b := text[i]; {
	case b == '\t':
		return i > 0 && text[i-1] != '\n'
	case b < 0x20 && b != '\n' && b != '\r', b == 0x7f:
		return false
	}
	return true
}
