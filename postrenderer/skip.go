package postrenderer

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"

	"github.com/confighash/confighash/internal/yamlnode"
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
	if yamlnode.HasLoneCR(text) || yamlnode.HasUnicodeBreak(text) || indentedStart(text) {
		return h, false
	}
	var startsBuf [32]int
	starts, ok := scanText(text, startsBuf[:0])
	if !ok {
		return h, false
	}
	var seen [][]byte
	for _, s := range starts {
		end := len(text)
		if i := bytes.IndexByte(text[s:], '\n'); i >= 0 {
			end = s + i
		}
		line := bytes.TrimSuffix(text[s:end], []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
			continue
		}
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
			if !ok || continuedBelow(text[end:]) {
				return h, false
			}
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

// continuedBelow reports whether the first line after a top-level line that
// is neither blank nor a comment in the first column is indented, and so may continue that line's value. rest
// starts at the line end of the top-level line.
func continuedBelow(rest []byte) bool {
	for len(rest) > 0 {
		rest = rest[1:] // the line end
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i:]
		} else {
			rest = nil
		}
		if len(bytes.TrimSpace(line)) > 0 && line[0] != '#' {
			return line[0] == ' '
		}
	}
	return false
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

// scanText checks that text is YAML text and finds its top-level lines in
// one pass. It reports false for bytes that are not UTF-8, for the control
// characters YAML forbids (every C0 character but tab, LF and CR, and DEL)
// and for a tab that starts a line, which YAML forbids in indentation.
// Otherwise it appends to starts the offset of every line whose first byte
// is neither a space nor its line end, and returns them.
//
// It reads eight bytes at a time. Each step computes, for the bytes of the
// word, exact masks of those below 0x20, equal to DEL, to LF and CR, and to
// tab (below and equal); a word of printable text, most of a manifest, is
// done after the first two.
func scanText(text []byte, starts []int) ([]int, bool) {
	if !utf8.Valid(text) {
		return nil, false
	}
	if len(text) > 0 && text[0] != ' ' && text[0] != '\n' {
		starts = append(starts, 0)
	}
	var tail [8]byte
	for i := 0; i < len(text); i += 8 {
		var w uint64
		if rest := text[i:]; len(rest) >= 8 {
			w = binary.LittleEndian.Uint64(rest)
		} else {
			// The last word, padded with spaces, which nothing flags.
			n := copy(tail[:], rest)
			for j := n; j < len(tail); j++ {
				tail[j] = ' '
			}
			w = binary.LittleEndian.Uint64(tail[:])
		}
		// A quick look first: no byte below 0x20 (this test may flag bytes
		// above a true one, never a word without one) and none equal to DEL.
		if (w-onesBytes*0x20)&^w&highBits == 0 && ((w&lowBits)+onesBytes)&^w&highBits == 0 {
			continue
		}
		control := below(w, 0x20) | equal(w, 0x7f)
		ends, tabs := equal(w, '\n'), equal(w, '\t')
		if control&^(ends|equal(w, '\r')|tabs) != 0 {
			return nil, false
		}
		for ; tabs != 0; tabs &= tabs - 1 {
			p := i + bits.TrailingZeros64(tabs)/8
			if p == 0 || text[p-1] == '\n' {
				return nil, false
			}
		}
		for ; ends != 0; ends &= ends - 1 {
			p := i + bits.TrailingZeros64(ends)/8 + 1 // the next line's start
			if p < len(text) && text[p] != ' ' && text[p] != '\n' {
				starts = append(starts, p)
			}
		}
	}
	return starts, true
}

// Byte masks over a 64-bit word of eight bytes: the high bit of each byte of
// the result says whether that byte of w passes the test. Both are exact
// (no borrow crosses bytes), so a mask's bits can be used as positions.
const (
	onesBytes = 0x0101010101010101
	highBits  = 0x8080808080808080
	lowBits   = 0x7f7f7f7f7f7f7f7f
)

// below marks the bytes of w less than n (0 < n <= 0x80).
func below(w uint64, n byte) uint64 {
	return ^((w&lowBits + onesBytes*uint64(0x80-n)) | w) & highBits
}

// equal marks the bytes of w equal to c.
func equal(w uint64, c byte) uint64 { return below(w^(onesBytes*uint64(c)), 1) }

// indentedStart reports whether the first line of text that holds
// anything (firstContent) is indented: the document's root is then not a
// mapping of the top-level lines the header scan reads (" -" opens a list,
// whatever follows at the first column; "--- {a: b}" is left to the parser
// too).
func indentedStart(text []byte) bool {
	line := firstContent(text)
	return len(line) > 0 && (line[0] == ' ' || line[0] == '\t')
}
