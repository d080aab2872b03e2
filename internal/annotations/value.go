package annotations

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/confighash/confighash/internal/yaml11"
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
// YAML 1.2 and YAML 1.1 (yaml11: an unquoted yes or off is a boolean to
// kubectl and Helm, which send it so and have the object refused).
func ReadsAsString(v *yaml.Node) bool {
	return v.Kind == yaml.ScalarNode && v.ShortTag() == strTag && yaml11.Scalar(v) == yaml11.String
}

// Kind returns what scalar v is to the strictest YAML reader, for a
// message naming why it is not a string.
func Kind(v *yaml.Node) yaml11.Kind {
	if name, ok := yamlnode.NonScalar(v); ok {
		return yaml11.Kind(name)
	}
	if k := yaml11.Scalar(v); k != yaml11.String {
		return k
	}
	if v.ShortTag() != strTag {
		return yaml11.Kind("a " + strings.TrimPrefix(v.ShortTag(), "!!"))
	}
	return yaml11.String
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
	return yaml11.Plain(s) == yaml11.String
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// NotStringError describes annotation key of m, present and not a string,
// as the content readers describe a config value that is not one. It names
// the key and what the value is, never the value.
func NotStringError(m *yaml.Node, key string) error {
	kind := Kind(Node(m, key))
	hint := ""
	if kind.Quotable() {
		hint = " (quote it)"
	}
	return fmt.Errorf("annotation %s: expected a string, found %s%s; kubectl and Helm send it so and the API server refuses the object", key, kind, hint)
}
