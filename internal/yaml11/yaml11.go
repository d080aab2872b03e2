// Package yaml11 tells what a YAML scalar is to every reader of a manifest:
// YAML 1.1 as sigs.k8s.io/yaml (go.yaml.in/yaml/v2) reads it, which is what
// kubectl and Helm send to the API server, and YAML 1.2 as yaml.v3 and kyaml
// read it. A plain scalar is a string only when both read it as one: YAML
// 1.1 also takes y, yes, on, n, no and off (in three spellings each) for
// booleans, and yaml.v3 takes a date for a timestamp. It holds the one rule
// every confighash reader applies to config values and annotations; it
// imports no YAML parser.
package yaml11

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// Kind is what a scalar is to the strictest of the readers, described for
// error messages.
type Kind string

// The kinds a scalar can have.
const (
	String    Kind = "a string"
	Bool      Kind = "a boolean"
	Number    Kind = "a number"
	Null      Kind = "null"
	Timestamp Kind = "a timestamp"
	// Binary is a scalar tagged !!binary: sigs.k8s.io/yaml stores its
	// base64 decoded, yaml.v3 keeps the text.
	Binary Kind = "a !!binary value"
)

// Quotable reports whether quoting the scalar makes it the string it
// looks like (a boolean or a number), for the "(quote it)" hint.
func (k Kind) Quotable() bool { return k == Bool || k == Number }

// words are the plain scalars YAML 1.1 (and, for true, false and null,
// YAML 1.2) resolves by exact spelling.
var words = map[string]Kind{
	"y": Bool, "Y": Bool, "yes": Bool, "Yes": Bool, "YES": Bool,
	"n": Bool, "N": Bool, "no": Bool, "No": Bool, "NO": Bool,
	"true": Bool, "True": Bool, "TRUE": Bool,
	"false": Bool, "False": Bool, "FALSE": Bool,
	"on": Bool, "On": Bool, "ON": Bool,
	"off": Bool, "Off": Bool, "OFF": Bool,
	"~": Null, "null": Null, "Null": Null, "NULL": Null,
	".nan": Number, ".NaN": Number, ".NAN": Number,
	".inf": Number, ".Inf": Number, ".INF": Number,
	"+.inf": Number, "+.Inf": Number, "+.INF": Number,
	"-.inf": Number, "-.Inf": Number, "-.INF": Number,
}

// BoolValue returns the value of s when YAML 1.1 reads the plain scalar s
// as a boolean: true for y, yes, on and true, false for n, no, off and
// false, in the spellings words lists.
func BoolValue(s string) (value, ok bool) {
	if words[s] != Bool {
		return false, false
	}
	switch s[0] {
	case 'y', 'Y', 't', 'T':
		return true, true
	case 'o', 'O':
		return s == "on" || s == "On" || s == "ON", true
	}
	return false, true
}

// float is the YAML float syntax both go-yaml versions accept.
var float = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// Plain returns what the plain (unquoted, untagged) scalar s is. It follows
// the resolver of go.yaml.in/yaml/v2 and v3 step by step: the first
// character decides whether s can be anything but a string, then the exact
// words, timestamps, integers in any base Go's strconv reads (underscores
// removed), YAML floats, 0b binary and 0o octal integers.
func Plain(s string) Kind {
	if s == "" {
		return Null
	}
	c := s[0]
	switch {
	case c == '+' || c == '-' || c >= '0' && c <= '9':
	case c == '.':
		if k, ok := words[s]; ok {
			return k
		}
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return Number
		}
		return String
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		if k, ok := words[s]; ok {
			return k
		}
		return String
	default:
		return String
	}
	if k, ok := words[s]; ok {
		return k
	}
	if timestamp(s) {
		return Timestamp
	}
	plain := strings.ReplaceAll(s, "_", "")
	if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return Number
	}
	if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return Number
	}
	if float.MatchString(plain) {
		if _, err := strconv.ParseFloat(plain, 64); err == nil {
			return Number
		}
	}
	// yaml.v3's binary and YAML 1.2 octal integers: the digits after the
	// prefix are parsed signed, then unsigned (so 0b+1 and 0o-7 are
	// numbers); after -0b or -0o, negative.
	for _, p := range []struct {
		prefix string
		base   int
	}{{"0b", 2}, {"0o", 8}} {
		if digits, ok := strings.CutPrefix(plain, p.prefix); ok {
			if _, err := strconv.ParseInt(digits, p.base, 64); err == nil {
				return Number
			}
			if _, err := strconv.ParseUint(digits, p.base, 64); err == nil {
				return Number
			}
		} else if digits, ok := strings.CutPrefix(plain, "-"+p.prefix); ok {
			if _, err := strconv.ParseInt("-"+digits, p.base, 64); err == nil {
				return Number
			}
		}
	}
	return String
}

// timestampFormats are the layouts go-yaml tries on a plain scalar that
// starts with four digits and a dash.
var timestampFormats = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

func timestamp(s string) bool {
	if len(s) < 5 || s[4] != '-' {
		return false
	}
	for i := range 4 {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	for _, f := range timestampFormats {
		if _, err := time.Parse(f, s); err == nil {
			return true
		}
	}
	return false
}

// Scalar returns what scalar node n is: quoted and block scalars are
// strings, a plain one is what Plain says, and an explicit tag decides
// for a tagged one (!!str and local tags such as !x are strings).
func Scalar(n *yaml.Node) Kind {
	if n.Style&yaml.TaggedStyle != 0 {
		switch n.ShortTag() {
		case "!!str":
			return String
		case "!!bool":
			return Bool
		case "!!int", "!!float":
			return Number
		case "!!null":
			return Null
		case "!!timestamp":
			return Timestamp
		case "!!binary":
			return Binary
		}
		if !strings.HasPrefix(n.Tag, "!!") && !strings.HasPrefix(n.Tag, "tag:yaml.org,2002:") {
			return String
		}
		return Kind("a " + n.ShortTag())
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return String
	}
	return Plain(n.Value)
}

// PlainKey returns String when sigs.k8s.io/yaml stores the plain mapping key
// s under the name s, as yaml.v3 and kyaml do, and what s is otherwise.
// sigs.k8s.io/yaml writes a key that YAML 1.1 reads as a boolean or number
// as its Go text ("on" becomes "true", "010" becomes "8", "1e3" becomes
// "1000") and refuses a null key; a timestamp stays its text.
func PlainKey(s string) Kind {
	switch k := Plain(s); k {
	case String, Timestamp:
		return String
	case Bool:
		if s == "true" || s == "false" {
			return String
		}
		return k
	case Number:
		if stored, ok := numberKey(s); ok && stored == s {
			return String
		}
		return k
	default:
		return k
	}
}

// numberKey returns the name sigs.k8s.io/yaml gives a key that YAML 1.2
// (yaml.v3) reads as a number: an int in decimal, a float as Go formats a
// float32 (.inf, -.inf and .nan for the special values), its text when
// YAML 1.1 reads a string (0o+7); false for one it refuses (an integer
// beyond int64).
func numberKey(s string) (string, bool) {
	plain := strings.ReplaceAll(s, "_", "")
	if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return strconv.FormatInt(i, 10), true
	}
	if digits, ok := strings.CutPrefix(plain, "0o"); ok && digits != "" && (digits[0] == '+' || digits[0] == '-') {
		// yaml.v3 reads 0o+7 as a number, YAML 1.1 a string (Go's base
		// prefixes take no sign after them): the key keeps its text.
		return s, true
	}
	if digits, ok := strings.CutPrefix(plain, "0b"); ok {
		i, err := strconv.ParseInt(digits, 2, 64)
		return strconv.FormatInt(i, 10), err == nil
	}
	if digits, ok := strings.CutPrefix(plain, "-0b"); ok {
		i, err := strconv.ParseInt("-"+digits, 2, 64)
		return strconv.FormatInt(i, 10), err == nil
	}
	var f float64
	switch {
	case strings.EqualFold(s, ".nan"):
		return ".nan", true
	case strings.EqualFold(s, ".inf") || strings.EqualFold(s, "+.inf"):
		return ".inf", true
	case strings.EqualFold(s, "-.inf"):
		return "-.inf", true
	case s[0] == '.':
		f, _ = strconv.ParseFloat(s, 64)
	default:
		var err error
		if f, err = strconv.ParseFloat(plain, 64); err != nil || !float.MatchString(plain) {
			return "", false
		}
	}
	return strconv.FormatFloat(f, 'g', -1, 32), true
}

// Key is PlainKey for a mapping key node: a quoted, block or !!str-tagged
// key is stored under its text.
func Key(n *yaml.Node) Kind {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) != 0 {
		return Scalar(n)
	}
	return PlainKey(n.Value)
}
