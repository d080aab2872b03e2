package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"unicode"
)

// ReadAsJSON reports whether kubectl and Helm read input as a JSON stream:
// its first byte after white space is "{" (the sniff of apimachinery's
// YAMLOrJSONDecoder, through which both read what they apply). They then
// read each object with JSON's rules, not YAML's; confighash reads every
// document as YAML.
func ReadAsJSON(input []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeftFunc(input, unicode.IsSpace), []byte("{"))
}

// nel is NEXT LINE (U+0085) in UTF-8.
var nel = []byte("\u0085")

// errRawNEL is the error for a NEL written as it is in a JSON stream.
var errRawNEL = errors.New(`a NEL character (U+0085) written as it is, in a stream that starts with "{": ` +
	`kubectl and Helm read such a stream as JSON, which keeps it in a string, while YAML reads it as a line break ` +
	`(a space inside quotes), so the hash would not be of what is applied; write it as \u0085`)

// errSurrogate is the error for a UTF-16 surrogate escape in a JSON stream.
var errSurrogate = errors.New(`a character written as a UTF-16 surrogate escape (\uD800 to \uDFFF, as Python's json.dumps ` +
	`writes emoji), in a stream that starts with "{": kubectl and Helm read such a stream as JSON, which joins a pair ` +
	`into one character, while YAML refuses the escape; write the character as it is, in UTF-8, or as \U and its eight hex digits`)

// ReadAlike returns an error naming the line (from 1) of the first thing
// in text, a document of a stream ReadAsJSON, that JSON and YAML read
// differently; nil when there is none. JSON and YAML read every other
// character of a string alike, or YAML refuses it (a C1 control, DEL):
//   - a NEL written as it is is one character to JSON and a line break to
//     YAML;
//   - a UTF-16 surrogate escape (a pair of them is how JSON writers that
//     keep to ASCII write a character beyond U+FFFF) is refused by YAML
//     as an "invalid Unicode character escape code", which does not say
//     what to write instead.
//
// Lines are counted in line feeds, as the editors a user opens the file in
// count them; the text itself is not shown (it may be in a Secret's value).
func ReadAlike(text []byte) error {
	first, cause := -1, error(nil)
	if i := bytes.Index(text, nel); i >= 0 {
		first, cause = i, errRawNEL
	}
	if i := surrogateEscape(text); i >= 0 && (first < 0 || i < first) {
		first, cause = i, errSurrogate
	}
	if first < 0 {
		return nil
	}
	return fmt.Errorf("line %d: %w", LineOf(text, first), cause)
}

// surrogateEscape returns the offset of the first \u escape of a UTF-16
// surrogate (D800 to DFFF) in text, -1 if none: a "u" after an odd number
// of backslashes (after an even number, the backslashes are escaped).
func surrogateEscape(text []byte) int {
	for i := 0; i+5 < len(text); i++ {
		if text[i] != '\\' {
			continue
		}
		j := i
		for j < len(text) && text[j] == '\\' {
			j++
		}
		if (j-i)%2 == 1 && j+4 < len(text) && text[j] == 'u' && (text[j+1] == 'd' || text[j+1] == 'D') &&
			bytes.IndexByte([]byte("89abcdefABCDEF"), text[j+2]) >= 0 && isHex(text[j+3]) && isHex(text[j+4]) {
			return j - 1
		}
		i = j - 1
	}
	return -1
}

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
