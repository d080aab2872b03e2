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
		{"a syntax error is kept", "a: [unclosed\n", "yaml: line 1: did not find expected ',' or ']'"},
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
