package yamlnode

import (
	"strings"
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

func TestReadAlike(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line       string // "" for none
		cause      string
	}{
		{"an escaped NEL", `{"k": "a\u0085b"}`, "", ""},
		{"a line separator, which yaml.v3 keeps", "{\"k\": \"a\u2028b\"}", "", ""},
		{"a character beyond U+FFFF as it is", "{\"k\": \"a\U0001F600b\"}", "", ""},
		{"an escape of another character", `{"k": "a\u00e9\u0041b"}`, "", ""},
		{"an escaped backslash before ud83d", `{"k": "a\\ud83d"}`, "", ""},
		{"a NEL as it is", "{\"data\":\n {\"k\": \"secret\u0085value\"}}", "line 2: ", "U+0085"},
		{"a surrogate pair", "{\"data\":\n\n {\"k\": \"secret\\ud83d\\ude00value\"}}", "line 3: ", "surrogate"},
		{"a surrogate pair in capitals", `{"k": "\uD83D\uDE00"}`, "line 1: ", "surrogate"},
		{"a low surrogate alone", `{"k": "\udc00"}`, "line 1: ", "surrogate"},
		{"three backslashes: an escaped one, then an escape", `{"k": "\\\ud83d\ude00"}`, "line 1: ", "surrogate"},
		{"the first of the two", "{\"a\": \"\\ud83d\\ude00\",\n\"b\": \"\u0085\"}", "line 1: ", "surrogate"},
		{"the first of the two, NEL", "{\"a\": \"\u0085\",\n\"b\": \"\\ud83d\\ude00\"}", "line 1: ", "U+0085"},
		{"an escape cut short", `{"k": "\ud8`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ReadAlike([]byte(tc.text))
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
