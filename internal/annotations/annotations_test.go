package annotations_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/annotations"
)

func TestCheckPrefix(t *testing.T) {
	tests := []struct {
		prefix string
		ok     bool
	}{
		{"confighash.dev", true},
		{"example.com", true},
		{"a", true},
		{"a-b.c-d", true},
		{strings.Repeat("a", 63) + "." + strings.Repeat("b", 189), true},
		{strings.Repeat("a", 63) + "." + strings.Repeat("b", 190), false},
		{"", false},
		{"Confighash.dev", false},
		{"-a.dev", false},
		{"a-.dev", false},
		{"a..dev", false},
		{"a.dev.", false},
		{"a/b", false},
		{"a_b", false},
	}
	for _, tt := range tests {
		err := annotations.CheckPrefix(tt.prefix)
		if tt.ok {
			require.NoError(t, err, tt.prefix)
			continue
		}
		assert.ErrorContains(t, err, "is not a DNS subdomain", tt.prefix)
	}
}

func TestKey(t *testing.T) {
	assert.Equal(t, "confighash.dev/hash", annotations.Key("", annotations.Hash))
	assert.Equal(t, "example.com/external", annotations.Key("example.com", annotations.External))
}
