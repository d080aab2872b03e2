package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// parserErrors are the problems yaml.v3's parser (not its scanner) reports.
var parserErrors = []string{
	"did not find expected <document start>",
	"did not find expected node content",
	"did not find expected key",
	"did not find expected '-' indicator",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
}

// ParseError returns err, an error of yaml.v3 parsing text, in a form safe
// to show. yaml.v3 quotes the name of an alias that no anchor defines
// ("unknown anchor 'name' referenced"), and an unquoted value that starts
// with "*", a Secret's password say, is such an alias: the error then
// gives the line of the alias and what to do instead. Helm 4 takes the items
// of a List out into documents of their own, which also leaves an alias in
// one item to an anchor in another referring to nothing. A character or
// byte yaml.v3's reader refuses, which it reports with neither place nor
// character, is named by its line and code point (characterError). Other
// errors are returned as they are (yaml.v3's syntax errors quote no text).
//
// yaml.v3 writes the line of a parser error (as opposed to a scanner error)
// counted from 0: ParseError counts it from 1, as every other line is. It
// also takes more than a line feed for a line break (syntaxError): the
// line a syntax error names is turned into the line an editor shows.
func ParseError(text []byte, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if e := characterError(text, msg); e != nil {
		return e
	}
	start := strings.Index(msg, "unknown anchor '")
	if start < 0 || !strings.HasSuffix(msg, "' referenced") {
		if e := syntaxError(text, msg); e != nil {
			return e
		}
		return err
	}
	name := msg[start+len("unknown anchor '") : len(msg)-len("' referenced")]
	if i := bytes.Index(text, []byte("*"+name)); i >= 0 {
		return AtLine(LineOf(text, i), errors.New(UnknownAlias))
	}
	return errors.New(UnknownAlias)
}

// readerProblems are what yaml.v3's reader reports of a character or byte
// it refuses, with no place or only the line of the token around it.
var readerProblems = []string{
	"control characters are not allowed",
	"invalid leading UTF-8 octet",
	"incomplete UTF-8 octet sequence",
	"invalid trailing UTF-8 octet",
	"invalid length of a UTF-8 sequence",
	"invalid Unicode character",
}

// characterError returns, for yaml.v3's message msg of a refused character
// or byte, an error naming the line of the first one in text and what to
// write instead; nil for any other message. The character is named by its
// code point only, never with the text around it (a Secret's value).
func characterError(text []byte, msg string) error {
	if !strings.HasPrefix(msg, "yaml: ") || !slices.ContainsFunc(readerProblems, func(p string) bool { return strings.HasSuffix(msg, " "+p) }) {
		return nil
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return AtLine(LineOf(text, i), errors.New("bytes that are not UTF-8: YAML refuses them (so do kubectl and Helm where they read YAML); "+
				"save the text as UTF-8, and binary content base64-encoded, in a ConfigMap's binaryData or a Secret's data"))
		case !yamlAllows(r):
			what := "a control character"
			switch {
			case r == 0:
				what = "NUL; text in UTF-16 or UTF-32 is full of them: convert it to UTF-8"
			case r > 0x9f:
				what = "a noncharacter"
			}
			return AtLine(LineOf(text, i), fmt.Errorf("a character YAML does not allow written as it is (%U, %s): kubectl and Helm refuse it "+
				"in YAML too; write it escaped in a double-quoted string, as \\u%04X", r, what, r))
		}
		i += size
	}
	return nil
}

// yamlAllows reports whether YAML allows r written as it is (YAML 1.2's
// printable characters, which yaml.v3 and kubectl's YAML reader check).
func yamlAllows(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r', r == 0x85:
		return true
	case r >= 0x20 && r <= 0x7e, r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd, r >= 0x10000 && r <= 0x10ffff:
		return true
	}
	return false
}

// UnknownAlias and SelfAlias say what is wrong with an alias without its
// name: an unquoted value that starts with "*" or "&", a Secret's password
// say, is an alias or an anchor, and its name is the value.
const (
	UnknownAlias = `an alias ("*" and a name) that no anchor of this document defines (anchors do not reach into other documents): a value that starts with "*" must be quoted`
	SelfAlias    = `an alias ("*" and a name) inside the value of its own anchor ("&" and the name): a value that starts with "&" or "*" must be quoted`
)

// quoted is what the YAML parsers quote of the text they read in an error:
// a value ("cannot decode !!str `…` as a !!int", "cannot unmarshal !!str
// `…` into int64", for a value tagged or typed otherwise) or an alias's
// name ("unknown anchor '…' referenced", an unquoted value that starts
// with "*").
var quoted = regexp.MustCompile("(!!\\w+ )`[^`]*`|(unknown anchor )'[^']*'")

// HideQuoted returns err with what a YAML parser quoted of its input left
// out, for errors of files read with another library (a kubeconfig read by
// client-go), whose quoted text may be a token or a password.
func HideQuoted(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := quoted.ReplaceAllString(msg, "${1}${2}(a value, not shown)"); clean != msg {
		return errors.New(clean)
	}
	return err
}
