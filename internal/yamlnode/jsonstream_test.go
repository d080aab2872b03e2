package yamlnode

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// obj is a JSON object holding s as a string written as it is.
func obj(s string) string { return `{"kind": "ConfigMap", "data": {"k": "` + s + `"}}` }

// yamlDoc is a YAML document holding s in a double-quoted string.
func yamlDoc(s string) string { return "kind: ConfigMap\ndata:\n  k: \"" + s + "\"\n" }

// TestJSONPrefix: the part of a stream kubectl reads as JSON, as measured
// with kubectl create --dry-run=client (README.md): the JSON values before
// the first that fails, when the stream starts with "{". Each row is held
// to kubectl's reader too: every string holds a NEL, which JSON keeps and
// YAML reads as a space, so the objects it reads with a NEL are those it
// read as JSON.
func TestJSONPrefix(t *testing.T) {
	a := obj("x\u0085")
	y := yamlDoc("x\u0085")
	for _, tc := range []struct {
		name, input string
		want        string // the prefix read as JSON
	}{
		{"one object", a + "\n", a},
		{"one object after white space", " \n\t\r\n" + a, " \n\t\r\n" + a},
		{"a List", `{"kind": "List", "items": [` + a + "]}\n", `{"kind": "List", "items": [` + a + "]}"},
		{"objects one after another", a + a + "\n" + a + "\n", a + a + "\n" + a},
		{"an object, then ---", a + "\n---\n" + a + "\n", a},
		{"an object, then a YAML document without ---", a + "\n" + y, a},
		{"an object, a comment, then ---", a + " # c\n---\n" + y, a},
		{"two objects, then --- (kubectl refuses what follows)", a + "\n" + a + "\n---\n" + y, a + "\n" + a},
		{"not JSON: a tab in a string", obj("x\t\u0085") + "\n", ""},
		{"not JSON: a YAML flow mapping", "{kind: ConfigMap, data: {k: \"\u0085\"}}\n", ""},
		{"not JSON: white space JSON refuses before the brace (NO-BREAK SPACE)", "\u00a0" + a, ""},
		{"--- first", "---\n" + a, ""},
		{"a comment first", "# c\n" + a, ""},
		{"a byte order mark first", "\ufeff" + a, ""},
		{"YAML", y, ""},
		{"a list first", "[" + a + "]", ""},
		{"empty", "", ""},
		{"the brace beyond the first 4096 bytes", strings.Repeat(" ", 4096) + a, ""},
		{"the brace at byte 4096", strings.Repeat(" ", 4095) + a, strings.Repeat(" ", 4095) + a},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := tc.input[:JSONPrefix([]byte(tc.input))]
			assert.Equal(t, tc.want, prefix)
			values := 0
			for dec := json.NewDecoder(strings.NewReader(prefix)); dec.Decode(new(any)) == nil; {
				values++
			}
			assert.Equal(t, values, kubectlReadsAsJSON(tc.input), "objects kubectl reads as JSON")
		})
	}
}

// kubectlReadsAsJSON returns how many of the objects kubectl's reader reads
// from a stream hold a NEL: in a stream whose every string holds one, those
// it read as JSON.
func kubectlReadsAsJSON(stream string) int {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), sniffLength)
	n := 0
	for {
		var v any
		if dec.Decode(&v) != nil {
			return n
		}
		if b, err := json.Marshal(v); err == nil && bytes.Contains(b, nel) {
			n++
		}
	}
}

func TestCheckJSONPrefix(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		line        string // "" for none
		cause       string
	}{
		{"an escaped NEL", obj(`a\u0085b`), "", ""},
		{"a line separator, which yaml.v3 keeps", obj("a\u2028b"), "", ""},
		{"a character beyond U+FFFF as it is", obj("a\U0001F600b"), "", ""},
		{"an escape of another character", obj(`a\u00e9\u0041b`), "", ""},
		{"an escaped backslash before ud83d", obj(`a\\ud83d`), "", ""},
		{"a NEL in YAML", yamlDoc("secret\u0085value"), "", ""},
		{"a NEL in a document after ---", obj("x") + "\n---\n" + obj("secret\u0085value"), "", ""},
		{"a NEL in a YAML document after ---", obj("x") + "\n---\n" + yamlDoc("secret\u0085value"), "", ""},
		{"a NEL in a stream kubectl reads as YAML (a tab JSON refuses)", obj("\tsecret\u0085value"), "", ""},
		{"a NEL in a comment after the object", obj("x") + " # \u0085\n", "", ""},
		{"a surrogate pair in a document after ---", obj("x") + "\n---\n" + obj(`secret\ud83d\ude00value`), "", ""},
		{"a line separator between a space and a tab, in YAML", yamlDoc("a \u2028\tb"), "", ""},
		{"a line separator next to a space, in a stream kubectl reads as YAML", obj("\ta \u2028b"), "", ""},
		{"a line separator after a space", obj("secret \u2028value"), "line 1: ", "U+2028"},
		{"a line separator before a space", obj("secret\u2028 value"), "line 1: ", "U+2028"},
		{"a paragraph separator before a space", "{\n" + `"k": "secret` + "\u2029" + ` value"}`, "line 2: ", "U+2029"},
		{"a line separator at the end of a string after a space", obj("secret \u2028"), "line 1: ", "U+2028"},
		{"two separators, the second next to a space", obj("a\u2028b\u2029 c"), "line 1: ", "U+2028"},
		{"a NEL as it is", "{\"data\":\n {\"k\": \"secret\u0085value\"}}", "line 2: ", "U+0085"},
		{"a NEL in a List", "\n\n" + `{"kind": "List", "items": [` + "\n" + obj("secret\u0085value") + "]}", "line 4: ", "U+0085"},
		{"a NEL in the second of two objects", obj("x") + "\n" + obj("secret\u0085value"), "line 2: ", "U+0085"},
		{"a NEL in the first document of several", obj("secret\u0085value") + "\n---\n" + yamlDoc("x"), "line 1: ", "U+0085"},
		{"a surrogate pair", "{\"data\":\n\n {\"k\": \"secret\\ud83d\\ude00value\"}}", "line 3: ", "surrogate"},
		{"a surrogate pair in capitals", obj(`\uD83D\uDE00`), "line 1: ", "surrogate"},
		{"a low surrogate alone", obj(`\udc00`), "line 1: ", "surrogate"},
		{"a surrogate escape in a key", `{"\ud83d\ude00": 1}`, "line 1: ", "surrogate"},
		{"three backslashes: an escaped one, then an escape", obj(`\\\ud83d\ude00`), "line 1: ", "surrogate"},
		{"the first of the two", "{\"a\": \"\\ud83d\\ude00\",\n\"b\": \"\u0085\"}", "line 1: ", "surrogate"},
		{"the first of the two, NEL", "{\"a\": \"\u0085\",\n\"b\": \"\\ud83d\\ude00\"}", "line 1: ", "U+0085"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckJSONPrefix([]byte(tc.input))
			if tc.line == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tc.line), err.Error())
			assert.Contains(t, err.Error(), tc.cause)
			assert.NotContains(t, err.Error(), "secret")
		})
	}
}

// FuzzCheckJSONPrefix: the value JSONPrefix finds is what kubectl's reader
// (k8s.io/apimachinery's YAMLOrJSONDecoder) reads first, and where
// CheckJSONPrefix finds nothing, it reads the same to yaml.v3 (confighash's
// reader) as to encoding/json, or yaml.v3 refuses it.
func FuzzCheckJSONPrefix(f *testing.F) {
	for _, s := range []string{
		obj("x"), obj("a\u0085b"), obj(`a\u0085b`), obj(`\ud83d\ude00`), obj("\u2028\u2029"),
		obj(`\/\b\f\n\r\t\"\\`), `{"a": [1, 2.5, -3e2, true, false, null, {}]}`, obj("x") + "\n---\n" + obj("y"),
		obj("x") + obj("y"), "{\"a\":\t{\"b\":\n\"c\"}}", obj("\u00e9\u0080"), `{"": {"0": "` + "\u2028" + ` 0"}}`,
		obj("a\u2028\u2029b"), obj("\u2028"),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		end := JSONPrefix(input)
		if end == 0 || CheckJSONPrefix(input) != nil || !utf8.Valid(input[:end]) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(input[:end]))
		var values []any
		for {
			var v any
			if dec.Decode(&v) != nil {
				break
			}
			values = append(values, v)
		}
		if len(values) != 1 {
			return // confighash refuses two objects without "---" between them
		}
		// kubectl's reader (of the apimachinery version kubectl 1.37
		// builds with) reads that value first.
		var first any
		if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(input), sniffLength).Decode(&first); err != nil {
			t.Fatalf("kubectl's reader refuses %q, which JSONPrefix reads as JSON: %v", input, err)
		}
		if !reflect.DeepEqual(values[0], first) {
			t.Fatalf("kubectl reads %q otherwise than JSONPrefix's JSON:\n%#v\n%#v", input, first, values[0])
		}
		var n yaml.Node
		if yaml.Unmarshal(input[:end], &n) != nil {
			return // YAML refuses it: an error, not a wrong hash
		}
		var y any
		if n.Decode(&y) != nil {
			return
		}
		// Numbers compare as JSON reads them: YAML's, written as JSON,
		// read back.
		b, err := json.Marshal(y)
		require.NoError(t, err)
		var fromYAML any
		require.NoError(t, json.Unmarshal(b, &fromYAML))
		if !reflect.DeepEqual(values[0], fromYAML) {
			t.Fatalf("JSON and YAML read %q differently:\n%#v\n%#v", input[:end], values[0], y)
		}
	})
}
