package yaml11_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/yaml11"
)

// candidates are spellings YAML 1.1 and 1.2 might read as something other
// than a string: every YAML 1.1 boolean spelling and near misses, nulls,
// integers in every base, with signs and underscores, floats, special
// floats, sexagesimal numbers, timestamps and merge keys.
var candidates = []string{
	"y", "Y", "yes", "Yes", "YES", "yEs", "n", "N", "no", "No", "NO", "nO",
	"true", "True", "TRUE", "tRue", "false", "False", "FALSE",
	"on", "On", "ON", "oN", "off", "Off", "OFF", "oFF", "t", "f", "ye", "nope",
	"~", "null", "Null", "NULL", "nULL", "none", "None",
	"0", "1", "-1", "+1", "007", "0777", "0o17", "-0o17", "0o9", "0o+0", "0o-7", "0o+-7", "-0o+7", "0b+1", "0b-1", "-0b+1", "0x+1", "0x-1", "0x1F", "0X1f", "-0x1F", "0xg", "08", "09",
	"0b101", "-0b101", "+0b101", "0b102", "0B101", "1_000", "1__0", "_1", "1_", "0x_1F", "1,000",
	"9178192511668845", "99999999999999999999", "-99999999999999999999", "18446744073709551615",
	"1e3", "1E3", "1e+3", "1e-3", "1.", ".5", "-.5", "+.5", "1.5", "1.5e3", "1.2.3", "1e", "e3",
	"1503602033657e77", "0.1_1", "._5", "1_000.5", "0x1p-2", "Inf", "inf", "NaN", "nan", "infinity",
	".inf", ".Inf", ".INF", ".iNF", "+.inf", "-.inf", "-.Inf", "+.INF", ".nan", ".NaN", ".NAN", ".Nan", ".", "..",
	"1:20", "190:20:30", "-1:20", "1:20.5",
	"2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14T21:59:43Z", "2001-12-14 21:59:43.10",
	"2001-1-2", "2001-13-45", "20011-12-14", "2001-12-14x", "2001-12-14 21:59:43.10 -5",
	"<<", "=", "+", "abc", "a1", "v1-sha256:00", "1abc", "0xabcdefabcdefabcdef",
}

// TestPlainAgreesWithTheReaders feeds every candidate, plain, to yaml.v3
// and to sigs.k8s.io/yaml (as kubectl reads a manifest) and checks that
// Plain calls it a string exactly when both readers do, and names what it
// is otherwise.
func TestPlainAgreesWithTheReaders(t *testing.T) {
	var differ []string
	for _, s := range candidates {
		v3, sigs, ok := read(t, s)
		require.True(t, ok, "%q is not one plain scalar", s)
		want := yaml11.String
		switch {
		case sigs != yaml11.String:
			want = sigs
		case v3 != yaml11.String:
			want = v3
		}
		assert.Equal(t, want, yaml11.Plain(s), "%q (yaml.v3: %s, sigs.k8s.io/yaml: %s)", s, v3, sigs)
		if v3 == yaml11.String && sigs != yaml11.String {
			differ = append(differ, s)
		}
	}
	// The plain scalars kubectl and Helm turn into something other than a
	// string while yaml.v3 and kyaml read a string: the YAML 1.1 booleans.
	assert.ElementsMatch(t, []string{"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"}, differ)
}

// TestBoolValueAgreesWithKubectl: for every candidate, BoolValue gives the
// boolean sigs.k8s.io/yaml (kubectl, Helm) reads from the plain scalar, and
// no value for one it reads as anything else.
func TestBoolValueAgreesWithKubectl(t *testing.T) {
	for _, s := range candidates {
		j, err := sigsyaml.YAMLToJSON([]byte("v: " + s + "\n"))
		var m map[string]any
		if err == nil {
			require.NoError(t, json.Unmarshal(j, &m))
		}
		want, isBool := m["v"].(bool)
		got, ok := yaml11.BoolValue(s)
		assert.Equal(t, isBool, ok, "%q: a boolean to sigs.k8s.io/yaml", s)
		assert.Equal(t, want, got, "%q", s)
	}
}

// FuzzPlain holds Plain to the two readers on any plain scalar.
func FuzzPlain(f *testing.F) {
	for _, s := range candidates {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v3, sigs, ok := read(t, s)
		if !ok {
			return
		}
		if got := yaml11.Plain(s); (got == yaml11.String) != (v3 == yaml11.String && sigs == yaml11.String) {
			t.Fatalf("Plain(%q) = %s; yaml.v3: %s, sigs.k8s.io/yaml: %s", s, got, v3, sigs)
		}
		if stored, ok := storedUnder(t, s); ok && stored != (yaml11.PlainKey(s) == yaml11.String) {
			t.Fatalf("PlainKey(%q) = %s; sigs.k8s.io/yaml stores it under its text: %v", s, yaml11.PlainKey(s), stored)
		}
	})
}

// read returns what yaml.v3 and sigs.k8s.io/yaml make of s written plain
// as a mapping value, and false when s does not read back as one plain
// scalar with the text s.
func read(t *testing.T, s string) (v3, sigs yaml11.Kind, ok bool) {
	t.Helper()
	if strings.ContainsAny(s, "\n\r\t") {
		return "", "", false
	}
	doc := []byte("v: " + s + "\n")
	var n yaml.Node
	if yaml.Unmarshal(doc, &n) != nil || len(n.Content) != 1 || len(n.Content[0].Content) != 2 {
		return "", "", false
	}
	v := n.Content[0].Content[1]
	if v.Kind != yaml.ScalarNode || v.Style != 0 || v.Value != s || n.Content[0].Content[0].Value != "v" {
		return "", "", false
	}
	j, err := sigsyaml.YAMLToJSON(doc)
	if err != nil {
		// NaN and infinities have no JSON form: YAMLToJSON fails on them.
		require.Contains(t, strings.ToLower(s), "n", "sigs.k8s.io/yaml refused %q: %v", s, err)
		sigs = yaml11.Number
	} else {
		var m map[string]any
		require.NoError(t, json.Unmarshal(j, &m))
		sigs = kindOf(m["v"], s)
	}
	return tagKind(v.Tag), sigs, true
}

func kindOf(v any, s string) yaml11.Kind {
	switch v := v.(type) {
	case string:
		if v == s {
			return yaml11.String
		}
		return yaml11.Kind("the string " + v)
	case bool:
		return yaml11.Bool
	case float64:
		return yaml11.Number
	case nil:
		return yaml11.Null
	}
	return "something else"
}

func tagKind(tag string) yaml11.Kind {
	switch tag {
	case "!!str", "!!merge": // "<<" is a merge key only as a key; as a value yaml.v3 decodes the string
		return yaml11.String
	case "!!bool":
		return yaml11.Bool
	case "!!int", "!!float":
		return yaml11.Number
	case "!!null":
		return yaml11.Null
	case "!!timestamp":
		return yaml11.Timestamp
	}
	return yaml11.Kind("a " + tag)
}

// TestScalar: quoting and block style make a string, a tag decides for a
// tagged scalar, and a plain one is what Plain says.
func TestScalar(t *testing.T) {
	for text, want := range map[string]yaml11.Kind{
		"yes": yaml11.Bool, `"yes"`: yaml11.String, "'on'": yaml11.String, "|\n  no": yaml11.String, ">\n  off": yaml11.String,
		"!!str yes": yaml11.String, "!!int 12": yaml11.Number, "!!bool 'true'": yaml11.Bool, "!!binary aGk=": yaml11.Binary,
		"!local 12": yaml11.String, "2001-12-14": yaml11.Timestamp, "abc": yaml11.String, "1_000": yaml11.Number,
	} {
		var n yaml.Node
		require.NoError(t, yaml.Unmarshal([]byte("v: "+text+"\n"), &n))
		assert.Equal(t, want, yaml11.Scalar(n.Content[0].Content[1]), "%s", text)
	}
}

// TestPlainKeyAgreesWithTheReaders: a key PlainKey accepts is stored under
// its own text by sigs.k8s.io/yaml, one it refuses is not (or is refused).
func TestPlainKeyAgreesWithTheReaders(t *testing.T) {
	for _, s := range candidates {
		if strings.ContainsAny(s, ":") || s == "<<" || s == "=" {
			continue // not a plain key, or a merge key
		}
		stored, ok := storedUnder(t, s)
		require.True(t, ok, "%q is not one plain key", s)
		assert.Equal(t, stored, yaml11.PlainKey(s) == yaml11.String, "key %q", s)
	}
}

// storedUnder reports whether sigs.k8s.io/yaml stores the value of plain
// key s under the name s, and false when s is not one plain key to yaml.v3.
func storedUnder(t *testing.T, s string) (stored, ok bool) {
	t.Helper()
	doc := []byte(s + ": v\n")
	var n yaml.Node
	if strings.ContainsAny(s, "\n\r\t") || yaml.Unmarshal(doc, &n) != nil || len(n.Content) != 1 ||
		n.Content[0].Kind != yaml.MappingNode || len(n.Content[0].Content) != 2 {
		return false, false
	}
	k := n.Content[0].Content[0]
	if k.Kind != yaml.ScalarNode || k.Style != 0 || k.Value != s || k.Tag == "!!merge" || n.Content[0].Content[1].Value != "v" {
		return false, false
	}
	j, err := sigsyaml.YAMLToJSON(doc)
	if err != nil {
		return false, true
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(j, &m))
	_, stored = m[s]
	return stored, true
}
