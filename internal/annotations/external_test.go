package annotations_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/annotations"
)

func TestExternalList(t *testing.T) {
	uses := []hashing.Use{{Kind: hashing.KindConfigMap, Name: "a"}, {Kind: hashing.KindSecret, Name: "b.c", Keys: []string{"k"}}}
	value := annotations.FormatExternal(uses)
	assert.Equal(t, "ConfigMap/a,Secret/b.c", value)
	assert.Equal(t, map[string]bool{"ConfigMap/a": true, "Secret/b.c": true}, annotations.ParseExternal(value), "the parser reads what the formatter writes")
	assert.Empty(t, annotations.FormatExternal(nil))

	tests := []struct {
		value string
		want  map[string]bool
	}{
		{"", map[string]bool{}},
		{" ConfigMap/a , ,Secret/b,", map[string]bool{"ConfigMap/a": true, "Secret/b": true}},
		{"ConfigMap/a,ConfigMap/a", map[string]bool{"ConfigMap/a": true}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, annotations.ParseExternal(tt.value), tt.value)
	}
}
