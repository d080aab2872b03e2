package yamlnode_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	yaml "go.yaml.in/yaml/v3"

	"github.com/confighash/confighash/internal/yamlnode"
)

func TestParseError(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"an unquoted value that starts with *", "kind: Secret\nstringData:\n  password: *hunter2\n",
			`line 3: an alias ("*" and a name) that no anchor of this document defines (anchors do not reach into other documents): a value that starts with "*" must be quoted`},
		{"an alias in a flow mapping", "{a: 1, b: *pw}",
			`line 1: an alias ("*" and a name) that no anchor of this document defines (anchors do not reach into other documents): a value that starts with "*" must be quoted`},
		// yaml.v3 counts a parser error's line from 0, a scanner error's
		// from 1: both read from 1 here, the line of the flow's "[", of
		// the key out of place.
		{"a parser error: an unclosed flow", "a: 1\nb: [x\n", "yaml: line 2: did not find expected ',' or ']'"},
		{"a parser error: a key out of place", "a: 1\nb:\n  c: 1\n d: 2\n", "yaml: line 4: did not find expected key"},
		{"a scanner error is kept", "a: 1\nb: \"x\n", "yaml: line 2: found unexpected end of stream"},
		{"a scanner error is kept: a tab", "a: 1\n\tb: 2\n", "yaml: line 2: found a tab character that violates indentation"},
		// yaml.v3's reader names no place for a character it refuses, nor
		// the character: its line and code point, and the escape to write.
		{"DEL written as it is", "a: 1\nb: \"x\x7fy\"\n",
			`line 2: a character YAML does not allow written as it is (U+007F, a control character): kubectl and Helm refuse it in YAML too; write it escaped in a double-quoted string, as \u007F`},
		{"a C1 control in a plain scalar", "a: 1\nb: 2\nc: x\u009fy\n",
			`line 3: a character YAML does not allow written as it is (U+009F, a control character): kubectl and Helm refuse it in YAML too; write it escaped in a double-quoted string, as \u009F`},
		{"a C0 control in JSON", "{\"a\": \"x\x01\"}",
			`line 1: a character YAML does not allow written as it is (U+0001, a control character): kubectl and Helm refuse it in YAML too; write it escaped in a double-quoted string, as \u0001`},
		{"a noncharacter", "a: |\n  x\n  \uffffy\n",
			`line 3: a character YAML does not allow written as it is (U+FFFF, a noncharacter): kubectl and Helm refuse it in YAML too; write it escaped in a double-quoted string, as \uFFFF`},
		{"bytes that are not UTF-8", "a: 1\nb: x\xffy\n",
			`line 2: bytes that are not UTF-8: YAML refuses them (so do kubectl and Helm where they read YAML); save the text as UTF-8, and binary content base64-encoded, in a ConfigMap's binaryData or a Secret's data`},
		{"a surrogate encoded in UTF-8", "a: 1\n\nb: \"x\xed\xa0\x80\"\n",
			`line 3: bytes that are not UTF-8: YAML refuses them (so do kubectl and Helm where they read YAML); save the text as UTF-8, and binary content base64-encoded, in a ConfigMap's binaryData or a Secret's data`},
		{"a cut UTF-8 sequence at the end", "a: 1\nb: x\xe2\x82",
			`line 2: bytes that are not UTF-8: YAML refuses them (so do kubectl and Helm where they read YAML); save the text as UTF-8, and binary content base64-encoded, in a ConfigMap's binaryData or a Secret's data`},
		// YAML breaks lines at a lone CR, NEL, LS and PS too, which
		// cut a plain or block value in two: the line is the one an
		// editor shows (yaml.v3 counted one more), and the break is named.
		{"a line separator in a plain value", "a: 1\nb: x\u2028y\n",
			`yaml: line 2: could not find expected ':' (line 2 holds U+2028 (LINE SEPARATOR) written as it is, which YAML, and kubectl, read as a line break; in a value, write it escaped in a double-quoted string, as \u2028; in a comment, delete it)`},
		{"a NEL in a plain value", "a: 1\nb: x\u0085y\nc: 2\n",
			`yaml: line 2: could not find expected ':' (line 2 holds U+0085 (NEXT LINE) written as it is, which YAML, and kubectl, read as a line break; in a value, write it escaped in a double-quoted string, as \u0085; in a comment, delete it)`},
		{"a paragraph separator in a literal block", "a: 1\nb: |\n  x\u2029y\n  z\nc: 2\n",
			`yaml: line 3: could not find expected ':' (line 3 holds U+2029 (PARAGRAPH SEPARATOR) written as it is, which YAML, and kubectl, read as a line break; in a value, write it escaped in a double-quoted string, as \u2029; in a comment, delete it)`},
		{"a line separator in a folded block", "a: 1\nb: >\n  x\u2028y\n  z\n", "yaml: line 3: could not find expected ':' (line 3 holds U+2028"},
		{"a line separator in a comment", "# x\u2028y\nb: 2\nc: [3\n", "yaml: line 2: mapping values are not allowed in this context (line 1 holds U+2028"},
		{"a carriage return with no line feed", "a: x\ry\nb: [1\n",
			`yaml: line 1: could not find expected ':' (line 1 holds a carriage return (U+000D) with no line feed after it written as it is, which YAML, and kubectl, read as a line break; in a value, write it escaped in a double-quoted string, as \r; in a comment, delete it)`},
		{"a parser error after a NEL: the line an editor shows", "a: 1\nb: \"x\u0085y\"\nc: 2\nd: [1\n", "yaml: line 4: did not find expected ',' or ']'"},
		{"a scanner error after a line separator in a quoted value", "a: \"x\u2028y\"\nb: 2\nc: 3\n d: 4\n", "yaml: line 4: mapping values are not allowed in this context"},
		{"CR LF line ends", "a: 1\r\nb: [1\r\n", "yaml: line 2: did not find expected ',' or ']'"},
		{"a tab and a BOM are allowed: a syntax error is kept", "a: \"x\t\ufeff\"\nb: [x\n",
			"yaml: line 2: did not find expected ',' or ']'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n yaml.Node
			err := yamlnode.ParseError([]byte(tc.text), yaml.Unmarshal([]byte(tc.text), &n))
			if assert.Error(t, err) {
				if strings.HasSuffix(tc.want, ")") || !strings.Contains(tc.want, " (") {
					assert.Equal(t, tc.want, err.Error())
				} else {
					assert.True(t, strings.HasPrefix(err.Error(), tc.want), err.Error())
				}
			}
		})
	}
	assert.NoError(t, yamlnode.ParseError(nil, nil))
}

// FuzzParseError: whatever yaml.v3 refuses, ParseError's message names no
// character problem without its line: every refusal of yaml.v3's reader
// becomes one that names the line and what to write.
func FuzzParseError(f *testing.F) {
	for _, seed := range []string{"a: \"x\x7f\"\n", "a: 1\nb: x\xffy\n", "{\"a\": \"\u009f\"}", "a: |\n  \uffff\n", "\xff\xfea\x00:\x00 \x001\x00", "a: [1\n", "a: x\u2028y\n", "a: \"x\u0085y\"\nb: [\n", "a: x\ry\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		var n yaml.Node
		err := yaml.Unmarshal(text, &n)
		if err == nil {
			return
		}
		msg := yamlnode.ParseError(text, err).Error()
		// A syntax error names a line of the text as an editor shows it.
		var line int
		if _, scanErr := fmt.Sscanf(msg, "yaml: line %d:", &line); scanErr == nil {
			if lines := yamlnode.LineOf(text, len(text)); line < 1 || line > lines {
				t.Fatalf("%q: line %d of %d: %s", text, line, lines, msg)
			}
		}
		// yaml.v3's reader's problems, which name neither line nor
		// character; its scanner's, about a tag's %-escape that is not
		// UTF-8 ("!%80") or a "\u" escape, are about text that is there
		// to read and are kept.
		for _, p := range []string{"control characters are not allowed", "invalid leading UTF-8 octet", "incomplete UTF-8 octet sequence",
			"invalid trailing UTF-8 octet", "invalid length of a UTF-8 sequence", "invalid Unicode character"} {
			if strings.HasSuffix(msg, " "+p) {
				t.Fatalf("%q: %s", text, msg)
			}
		}
	})
}
