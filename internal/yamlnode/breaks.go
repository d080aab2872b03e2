package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// YAML takes more than a line feed for a line break: a carriage return on
// its own, and NEL (U+0085), LS (U+2028) and PS (U+2029) written as they
// are. yaml.v3, and kubectl's YAML reader, count lines by all of them,
// and a plain or block scalar ends at one: a value copied from a web page
// or a word processor with such a character in it reads as a value cut in
// two, and the parser's complaint ("could not find expected ':'") names a
// line that an editor, which breaks lines at line feeds only, shows
// elsewhere. confighash names lines as an editor shows them (LineOf).

// syntaxPrefix is how yaml.v3 starts a syntax error: "yaml: line N: ".
var syntaxPrefix = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlSyntax returns the line, counted from 1 as yaml.v3 counts lines, and
// the problem of its syntax error msg; line 0 when msg is none.
func yamlSyntax(msg string) (line int, problem string) {
	m := syntaxPrefix.FindStringSubmatch(msg)
	if m == nil {
		return 0, ""
	}
	line, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, ""
	}
	problem = msg[len(m[0]):]
	// A parser error (as opposed to a scanner error) counts from 0.
	if slices.Contains(parserErrors, problem) {
		line++
	}
	return line, problem
}

// syntaxError returns yaml.v3's syntax error msg with its line counted from
// 1 and by line feeds, and, when the text up to that line holds a line
// break YAML reads where an editor sees none, the last such break named
// with its line and what to write instead; nil when msg is no syntax error.
func syntaxError(text []byte, msg string) error {
	yamlLine, problem := yamlSyntax(msg)
	if yamlLine == 0 {
		return nil
	}
	start, near, last := yamlLineBounds(text, yamlLine)
	prefix := "yaml: line "
	// A break that cut a value cuts it on the line of the error or on one
	// of the two before it; one further up is in a quoted value or a
	// comment and has nothing to do with the error.
	if last < near {
		return &LineError{parts: []string{prefix, ": " + problem}, lines: []int{LineOf(text, start)}}
	}
	r, _ := utf8.DecodeRune(text[last:])
	return &LineError{
		parts: []string{prefix, ": " + problem + " (line ", " holds " + breakName(r) + " written as it is, which YAML, and kubectl, read as a line break; " +
			"in a value, write it escaped in a double-quoted string, as " + breakEscape(r) + "; in a comment, delete it)"},
		lines: []int{LineOf(text, start), LineOf(text, last)},
	}
}

// yamlLineBounds returns, in one pass, the offsets where yaml.v3's line
// (counted from 1; one past the last is the end of text) and the line two
// before it (the first, for a line before the first) start in text, and
// the offset of the last line break before the line's end that is not a
// line feed (-1 for none).
func yamlLineBounds(text []byte, line int) (start, near, last int) {
	last = -1
	n := 1
	for i := 0; i < len(text) && n < line; {
		size := yamlBreak(text[i:])
		if size == 0 {
			i++
			continue
		}
		if text[i] != '\n' && (text[i] != '\r' || size != 2) {
			last = i
		}
		i += size
		n++
		start = i
		if n == line-2 {
			near = i
		}
	}
	if n < line {
		start = len(text)
		if n < line-2 {
			near = len(text)
		}
	}
	return start, near, last
}

// yamlBreak returns the length of the line break YAML reads at the start of
// b (CR LF, CR, LF, or a UnicodeBreak), 0 for none.
func yamlBreak(b []byte) int {
	switch {
	case len(b) == 0:
		return 0
	case b[0] == '\n':
		return 1
	case b[0] == '\r':
		if len(b) > 1 && b[1] == '\n' {
			return 2
		}
		return 1
	}
	return UnicodeBreak(b)
}

// UnicodeBreak returns the length of the line break b starts with that
// YAML 1.1 readers (yaml.v3, and libyaml's ports in kubectl and Helm) count
// besides "\n" and "\r", also inside a quoted value: NEL (U+0085), LINE
// SEPARATOR (U+2028) and PARAGRAPH SEPARATOR (U+2029); 0 when it starts
// with none.
func UnicodeBreak(b []byte) int {
	switch {
	case len(b) >= 2 && b[0] == 0xc2 && b[1] == 0x85:
		return 2
	case len(b) >= 3 && b[0] == 0xe2 && b[1] == 0x80 && (b[2] == 0xa8 || b[2] == 0xa9):
		return 3
	}
	return 0
}

// HasUnicodeBreak reports whether text holds a line break UnicodeBreak
// knows.
func HasUnicodeBreak(text []byte) bool {
	for _, lead := range [...]byte{0xc2, 0xe2} {
		for rest := text; ; {
			i := bytes.IndexByte(rest, lead)
			if i < 0 {
				break
			}
			if UnicodeBreak(rest[i:]) > 0 {
				return true
			}
			rest = rest[i+1:]
		}
	}
	return false
}

// HasLoneCR reports whether text holds a carriage return that no line feed
// follows, which YAML reads as a line break (a CRLF pair is one break, as
// to an editor).
func HasLoneCR(text []byte) bool {
	for i := bytes.IndexByte(text, '\r'); i >= 0; {
		if i+1 == len(text) || text[i+1] != '\n' {
			return true
		}
		j := bytes.IndexByte(text[i+1:], '\r')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// LoneCRDocument returns an error when text, a document of a stream cut at
// line feeds (as kubectl, Helm and kustomize cut one), holds more than one
// document to YAML, after a "---" (or "...") line ended by a carriage
// return alone (a file saved with old Mac line ends, say); nil otherwise,
// and for text whose first document YAML cannot read (the parse reports
// that). The three tools read only the first document of such text,
// dropping the rest without a word.
func LoneCRDocument(text []byte) error {
	if !HasLoneCR(text) {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var first yaml.Node
	if dec.Decode(&first) != nil {
		return nil
	}
	if line, more := AnotherDocument(dec); more && line > 0 {
		return moreDocuments(line)
	}
	return nil
}

// AnotherDocument reads on from dec, past a document decoded from it, and
// reports whether more than empty documents follow: one that holds
// something, or text YAML cannot read as a document ("..." and then no
// "---"). line is yaml.v3's line of where it starts, or of its error; 0
// when yaml.v3 names none.
func AnotherDocument(dec *yaml.Decoder) (line int, more bool) {
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		switch {
		case errors.Is(err, io.EOF):
			return 0, false
		case err != nil:
			line, _ := yamlSyntax(err.Error())
			return line, true
		case len(next.Content) > 0 && next.Content[0].Tag != "!!null":
			return next.Line, true
		}
	}
}

func moreDocuments(line int) error {
	return &LineError{parts: []string{"more YAML at line ",
		" (counting each carriage return as a line end, as YAML does) after the first document, past a document marker line " +
			"that ends with a carriage return alone; kubectl, Helm and kustomize, which cut a stream into documents at line feeds, " +
			"read the first document and drop the rest without a word: end the lines with line feeds (in a file of carriage " +
			"returns only: tr '\\r' '\\n')"},
		lines: []int{line}}
}

func breakName(r rune) string {
	switch r {
	case '\r':
		return "a carriage return (U+000D) with no line feed after it"
	case 0x85:
		return "U+0085 (NEXT LINE)"
	case 0x2028:
		return "U+2028 (LINE SEPARATOR)"
	}
	return "U+2029 (PARAGRAPH SEPARATOR)"
}

func breakEscape(r rune) string {
	if r == '\r' {
		return `\r`
	}
	return fmt.Sprintf(`\u%04X`, r)
}
