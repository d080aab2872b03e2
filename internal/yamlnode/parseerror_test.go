package yamlnode_test

import (
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n yaml.Node
			err := yamlnode.ParseError([]byte(tc.text), yaml.Unmarshal([]byte(tc.text), &n))
			if assert.Error(t, err) {
				assert.Equal(t, tc.want, err.Error())
			}
		})
	}
	assert.NoError(t, yamlnode.ParseError(nil, nil))
}
