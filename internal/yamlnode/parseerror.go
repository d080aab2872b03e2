package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
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
// one item to an anchor in another referring to nothing. Other errors are
// returned as they are (yaml.v3's syntax errors quote no text).
//
// yaml.v3 writes the line of a parser error (as opposed to a scanner error)
// counted from 0: ParseError counts it from 1, as every other line is.
func ParseError(text []byte, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	start := strings.Index(msg, "unknown anchor '")
	if start < 0 || !strings.HasSuffix(msg, "' referenced") {
		for _, p := range parserErrors {
			if strings.HasSuffix(msg, ": "+p) && strings.HasPrefix(msg, "yaml: line ") {
				return ShiftErrorLine(err, 1)
			}
		}
		return err
	}
	name := msg[start+len("unknown anchor '") : len(msg)-len("' referenced")]
	if i := bytes.Index(text, []byte("*"+name)); i >= 0 {
		return fmt.Errorf("line %d: %s", bytes.Count(text[:i], []byte{'\n'})+1, UnknownAlias)
	}
	return errors.New(UnknownAlias)
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
