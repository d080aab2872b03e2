package annotations_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/confighash/confighash/internal/annotations"
	"github.com/confighash/confighash/internal/yaml11"
)

// parse returns the root mapping of one YAML document.
func parse(t *testing.T, text string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(text), &doc))
	require.Len(t, doc.Content, 1)
	return doc.Content[0]
}

// TestReadsAsString: plain values are strings only when YAML 1.2 and YAML
// 1.1 both read them so; quoted ones always are.
func TestReadsAsString(t *testing.T) {
	for text, want := range map[string]bool{
		"9178192511668845": false, "1503602033657e77": false, "0b101": false, "0755": false, "1_000": false,
		"yes": false, "On": false, "~": false, "2001-12-14": false, ".inf": false, "1:20": true, // no sexagesimal in go-yaml v2
		"abc": true, "1.2.3": true, "v1-sha256:00": true, "ConfigMap/a,Secret/b": true, "0x1g": true,
		`"9178192511668845"`: true, "'yes'": true, "!!str 12": true, "!!int 12": false,
		"|\n  two\n  lines": true, "[a]": false, "{a: b}": false,
		"y": false, "N": false, "off": false, "NO": false, "yEs": true, "'off'": true,
	} {
		v := parse(t, "k: "+text+"\n").Content[1]
		assert.Equal(t, want, annotations.ReadsAsString(v), "%s", text)
	}
}

// TestKind names what a value is when it is not a string, as the content
// readers do.
func TestKind(t *testing.T) {
	for text, want := range map[string]yaml11.Kind{
		"no": yaml11.Bool, "On": yaml11.Bool, "false": yaml11.Bool, "0x1F": yaml11.Number, "~": yaml11.Null,
		"2001-12-14": yaml11.Timestamp, "[a]": "a list", "{a: b}": "a map", "'no'": yaml11.String, "abc": yaml11.String,
	} {
		assert.Equal(t, want, annotations.Kind(parse(t, "k: "+text+"\n").Content[1]), "%s", text)
	}
	alias := parse(t, "a: &x abc\nk: *x\n").Content[3]
	assert.Equal(t, yaml11.Kind("an alias"), annotations.Kind(alias))
	assert.Equal(t, yaml11.Binary, annotations.Kind(parse(t, "k: !!binary aGk=\n").Content[1]))
}

// TestPlainSafe: a value written plain reads back as the same string in
// YAML 1.1 and 1.2, so whatever PlainSafe accepts ReadsAsString accepts
// unquoted.
func TestPlainSafe(t *testing.T) {
	for s, want := range map[string]bool{
		"abc": true, "v1-sha256:00": true, "ConfigMap/a,Secret/b": true, "a.b_c": true,
		"": false, "1abc": false, "yes": false, "Off": false, "null": false, "a b": false,
		"a:": false, "a#b": false, "a'b": false, `a"b`: false, "-a": false, "é": false,
	} {
		assert.Equal(t, want, annotations.PlainSafe(s), "%q", s)
		if want {
			assert.True(t, annotations.ReadsAsString(parse(t, "k: "+s+"\n").Content[1]), "%q written plain", s)
		}
	}
}

// TestValue reads an annotation of an object or pod template as YAML reads
// it.
func TestValue(t *testing.T) {
	obj := parse(t, `
metadata:
  annotations:
    confighash.dev/hash: 9178192511668845
    confighash.dev/external: "ConfigMap/a"
    flow: {a: b}
`)
	tests := []struct {
		name              string
		node              *yaml.Node
		key, value        string
		present, isString bool
	}{
		{name: "number", node: obj, key: "confighash.dev/hash", value: "9178192511668845", present: true},
		{name: "string", node: obj, key: "confighash.dev/external", value: "ConfigMap/a", present: true, isString: true},
		{name: "mapping", node: obj, key: "flow", present: true},
		{name: "absent", node: obj, key: "confighash.dev/key-id"},
		{name: "no annotations", node: parse(t, "metadata: {name: x}\n"), key: "confighash.dev/hash"},
		{name: "metadata not a mapping", node: parse(t, "metadata: x\n"), key: "confighash.dev/hash"},
		{name: "not a mapping", node: parse(t, "[a]\n"), key: "confighash.dev/hash"},
		{name: "nil", key: "confighash.dev/hash"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			value, present, isString := annotations.Value(tc.node, tc.key)
			assert.Equal(t, tc.value, value)
			assert.Equal(t, tc.present, present)
			assert.Equal(t, tc.isString, isString)
			assert.Equal(t, tc.present, annotations.Node(tc.node, tc.key) != nil)
		})
	}
}
