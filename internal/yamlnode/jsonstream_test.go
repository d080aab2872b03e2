package yamlnode

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadAsJSON(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  bool
	}{
		{`{"kind": "List"}`, true},
		{" \n\t\r\n{}", true},
		// kubectl trims Unicode white space, NEL among it.
		{"\u0085\u00a0{}", true},
		{"---\n{}", false},
		{"# a comment\n{}", false},
		{"[{}]", false},
		// A byte order mark is no white space: kubectl reads YAML.
		{"\ufeff{}", false},
		{"kind: List", false},
		{"", false},
	} {
		assert.Equal(t, tc.want, ReadAsJSON([]byte(tc.input)), "%q", tc.input)
	}
}

func TestRawNEL(t *testing.T) {
	require.NoError(t, RawNEL([]byte(`{"data": {"k": "a\u0085b"}}`)), "an escaped NEL")
	require.NoError(t, RawNEL([]byte("{\"data\": {\"k\": \"a\u2028b\"}}")), "a line separator, which yaml.v3 keeps")
	err := RawNEL([]byte("{\"data\":\n {\"k\": \"secret\u0085value\"}}"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 2: ")
	assert.Contains(t, err.Error(), `write it as \u0085`)
	assert.NotContains(t, err.Error(), "secret")
}
