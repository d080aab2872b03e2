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

// RawNEL returns an error naming the line (from 1) of the first NEL written
// as it is in text, a document of a stream ReadAsJSON; nil when there is
// none. JSON and YAML read every other character of a string alike, or YAML
// refuses it (a C1 control, DEL): a NEL is the one character that YAML
// reads as a line break and JSON as itself. The line is counted in line
// feeds, as the editors a user opens the file in count them; the character
// itself is not shown (it may be in a Secret's value).
func RawNEL(text []byte) error {
	i := bytes.Index(text, nel)
	if i < 0 {
		return nil
	}
	return fmt.Errorf("line %d: %w", LineOf(text, i), errRawNEL)
}
