package yamlnode

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode"
)

// How kubectl reads a stream (k8s.io/apimachinery's YAMLOrJSONDecoder,
// through which kubectl and Helm 3 read what they apply; measured with
// kubectl 1.37 and Helm 3.22 on the local control plane, README.md; Helm 4
// puts each document of its post-renderer's output after a "---" line and
// a "# Source:" comment, so it reads every document as YAML):
//   - when the first of the stream's first 4096 bytes that is not Unicode
//     white space is "{", it reads JSON values one after another, each with
//     JSON's rules (encoding/json);
//   - when a value fails to read as JSON (a "---" line, a YAML document,
//     text JSON refuses such as a tab inside a string) after at most one
//     value, it reads the rest of the stream from there as YAML documents;
//     after two or more, it refuses the stream.
//
// So only the first document of a stream can be read as JSON: a "---"
// line ends what JSON reads. confighash reads every document as YAML.

// sniffLength is how many bytes of the stream kubectl looks at for "{".
const sniffLength = 4096

// JSONPrefix returns the length of the start of input that kubectl reads
// as JSON (0 when it reads the whole stream as YAML): the JSON values it
// reads before the first that fails, or the whole input. It ends inside
// the stream's first document.
func JSONPrefix(input []byte) int {
	window := input[:min(len(input), sniffLength)]
	if !bytes.HasPrefix(bytes.TrimLeftFunc(window, unicode.IsSpace), []byte("{")) {
		return 0
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	end := 0
	for {
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			// At the end of the input, or where kubectl goes on in
			// YAML (or, after two values, refuses the stream).
			return end
		}
		end = int(dec.InputOffset())
	}
}

// nel is NEXT LINE (U+0085) in UTF-8.
var nel = []byte("\u0085")

// jsonReading names the reading the errors below are about.
const jsonReading = `kubectl and Helm 3 read this document as JSON (the stream starts with "{" and no "---" line comes first), `

// errRawNEL is the error for a NEL written as it is where kubectl reads JSON.
var errRawNEL = errors.New(`a NEL character (U+0085) written as it is: ` + jsonReading +
	`which keeps it in the string, while YAML, as confighash reads it, takes it for a line break ` +
	`(a space inside quotes): the hash would not be of what is applied; write it as \u0085`)

// errSurrogate is the error for a UTF-16 surrogate escape where kubectl
// reads JSON.
var errSurrogate = errors.New(`a character written as a UTF-16 surrogate escape (\uD800 to \uDFFF, as Python's json.dumps ` +
	`writes emoji): ` + jsonReading + `which joins a pair into one character, while YAML, as confighash reads it, ` +
	`refuses the escape; write the character itself, in UTF-8`)

// errSeparatorBlank is the error for a LINE or PARAGRAPH SEPARATOR written
// as it is, next to a space, where kubectl reads JSON.
var errSeparatorBlank = errors.New(`a LINE or PARAGRAPH SEPARATOR (U+2028, U+2029) written as it is, next to a space: ` +
	jsonReading + `which keeps the space, while YAML, as confighash reads it, takes the separator for a line break ` +
	`and drops the spaces around it: the hash would not be of what is applied; write it as \u2028 or \u2029`)

// CheckJSONPrefix returns an error naming the line (of input, from 1) of
// the first thing in the part of input kubectl reads as JSON (JSONPrefix)
// that JSON and YAML read differently; nil when there is none. Every other
// character of a string they read alike, or YAML refuses it (a C1 control,
// DEL, invalid UTF-8):
//   - a NEL written as it is is one character to JSON and a line break to
//     YAML (kubectl get -o json writes it so);
//   - a LINE or PARAGRAPH SEPARATOR written as it is is a line break to
//     YAML too (yaml.v3 keeps it in a string, but drops the spaces before
//     and after it, which JSON keeps); JSON writers that escape it are
//     safe (Go's, so kubectl get -o json);
//   - a UTF-16 surrogate escape (a pair of them is how JSON writers that
//     keep to ASCII write a character beyond U+FFFF) is refused by YAML
//     as an "invalid Unicode character escape code", which does not say
//     what to write instead.
//
// The part of the stream kubectl reads as YAML is not looked at: there a
// NEL is a line break to kubectl too. The text itself is not shown (it may
// be a Secret's value).
func CheckJSONPrefix(input []byte) error {
	if !mayReadOtherwise(input) {
		return nil // spares reading a long JSON stream twice
	}
	text := input[:JSONPrefix(input)]
	first, cause := -1, error(nil)
	if i := bytes.Index(text, nel); i >= 0 {
		first, cause = i, errRawNEL
	}
	if i := surrogateEscape(text); i >= 0 && (first < 0 || i < first) {
		first, cause = i, errSurrogate
	}
	if i := separatorBlank(text); i >= 0 && (first < 0 || i < first) {
		first, cause = i, errSeparatorBlank
	}
	if first < 0 {
		return nil
	}
	return AtLine(LineOf(text, first), cause)
}

// surrogateEscape returns the offset of the first \u escape of a UTF-16
// surrogate (D800 to DFFF) in text, -1 if none: a "u" after an odd number
// of backslashes (after an even number, the backslashes are escaped).
func surrogateEscape(text []byte) int {
	for i := 0; i < len(text); i++ {
		if text[i] != '\\' {
			continue
		}
		j := i
		for j < len(text) && text[j] == '\\' {
			j++
		}
		if (j-i)%2 == 1 && j+4 < len(text) && text[j] == 'u' && (text[j+1] == 'd' || text[j+1] == 'D') &&
			bytes.IndexByte([]byte("89abcdefABCDEF"), text[j+2]) >= 0 {
			return j - 1
		}
		i = j - 1
	}
	return -1
}

// separators are LINE SEPARATOR and PARAGRAPH SEPARATOR in UTF-8.
var separators = [][]byte{[]byte("\u2028"), []byte("\u2029")}

// separatorBlank returns the offset of the first LINE or PARAGRAPH
// SEPARATOR in text with a space or tab right before or after it, -1 if
// none.
func separatorBlank(text []byte) int {
	first := -1
	for _, sep := range separators {
		for from := 0; ; {
			i := bytes.Index(text[from:], sep)
			if i < 0 {
				break
			}
			i += from
			if (i > 0 && isBlank(text[i-1])) || (i+len(sep) < len(text) && isBlank(text[i+len(sep)])) {
				if first < 0 || i < first {
					first = i
				}
				break
			}
			from = i + len(sep)
		}
	}
	return first
}

// isBlank reports whether c is a space or a tab, the white space YAML
// trims around a line break.
func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// mayReadOtherwise reports whether input holds any of the characters
// CheckJSONPrefix looks for: a NEL, a separator, or "\ud" or "\uD".
func mayReadOtherwise(input []byte) bool {
	return bytes.Contains(input, nel) || bytes.Contains(input, separators[0]) || bytes.Contains(input, separators[1]) ||
		bytes.Contains(input, []byte(`\ud`)) || bytes.Contains(input, []byte(`\uD`))
}
