package yamlnode_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/confighash/confighash/internal/yamlnode"
)

// TestShiftLines: a document parsed on its own, its lines shifted by the
// lines before it, has the lines of the same document parsed in its stream.
func TestShiftLines(t *testing.T) {
	const before = "a: 1\n---\n"
	const doc = "b:\n  c: [x, y]\n  d: &d {e: f}\n  g: *d\n"
	var alone, stream yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(doc), &alone))
	dec := yaml.NewDecoder(strings.NewReader(before + doc))
	var first yaml.Node
	require.NoError(t, dec.Decode(&first))
	require.NoError(t, dec.Decode(&stream))
	yamlnode.ShiftLines(&alone, yamlnode.LineOf([]byte(before+doc), len(before))-1)
	var lines func(a, b *yaml.Node)
	lines = func(a, b *yaml.Node) {
		assert.Equal(t, b.Line, a.Line, "%q", a.Value)
		require.Len(t, a.Content, len(b.Content))
		for i := range a.Content {
			lines(a.Content[i], b.Content[i])
		}
	}
	// The document nodes differ: in the stream, one starts at its "---" line.
	lines(alone.Content[0], stream.Content[0])
}

func TestShiftErrorLine(t *testing.T) {
	tests := []struct {
		msg  string
		by   int
		want string
	}{
		{"yaml: line 2: did not find expected ',' or ']'", 3, "yaml: line 5: did not find expected ',' or ']'"},
		{"data: key \"k\" appears twice (lines 7 and 8); the API server would keep only one", 3, "data: key \"k\" appears twice (lines 10 and 11); the API server would keep only one"},
		{"document 2: line 4: text after the marker, line 9: more", 2, "document 2: line 6: text after the marker, line 9: more"},
		{"line 3: an alias", 10, "line 13: an alias"},
		{"no line here", 4, "no line here"},
		{"yaml: line 2: x", 0, "yaml: line 2: x"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, yamlnode.ShiftErrorLine(errors.New(tt.msg), tt.by).Error(), tt.msg)
	}
	assert.NoError(t, yamlnode.ShiftErrorLine(nil, 3))
}
