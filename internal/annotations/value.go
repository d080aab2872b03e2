package annotations

import (
	"strings"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/yamlnode"
)

// strTag is the resolved tag of a YAML string.
const strTag = "!!str"

// Value returns annotation key of object or pod template m as YAML reads
// it: present says the key is there, and isString whether every YAML reader
// (YAML 1.2 as yaml.v3 and kyaml, YAML 1.1 as sigs.k8s.io/yaml and so
// kubectl) reads its value as the string value. An unquoted
// 9178192511668845 is a number: present, not a string. kyaml's yaml.Node is
// the same type.
func Value(m *yaml.Node, key string) (value string, present, isString bool) {
	v := Node(m, key)
	if v == nil {
		return "", false, false
	}
	return v.Value, true, ReadsAsString(v)
}

// Node returns the value node of annotation key in the metadata of mapping
// m, or nil.
func Node(m *yaml.Node, key string) *yaml.Node {
	return yamlnode.Path(m, "metadata", "annotations", key)
}

// ReadsAsString reports whether scalar v reads as the string v.Value in
// YAML 1.2 and YAML 1.1.
func ReadsAsString(v *yaml.Node) bool {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != strTag {
		return false
	}
	if v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) != 0 || PlainSafe(v.Value) {
		return true
	}
	// A plain scalar yaml.v3 reads as a string may still be a YAML 1.1 bool,
	// number or timestamp: ask the YAML 1.1 reader kubectl uses. (A plain
	// scalar holds no ": " or " #", so it reads back as one value.)
	var m map[string]any
	if strings.ContainsAny(v.Value, "\n\r") || sigsyaml.Unmarshal([]byte("v: "+v.Value), &m) != nil {
		return false
	}
	s, ok := m["v"].(string)
	return ok && s == v.Value
}

// PlainSafe reports whether s can be written as a plain scalar in block
// style and read back as the string s in YAML 1.1 and 1.2 alike: it starts
// with a letter (so it is no number, timestamp or special float), holds no
// space, quote or indicator that could end or change it, and is no word YAML
// 1.1 reads as a bool or null.
func PlainSafe(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isLetter(c), c >= '0' && c <= '9', c == '.', c == '_', c == '/', c == '-', c == ',':
		case c == ':' && i+1 < len(s):
		default:
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
