package inject

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseWorkload(t *testing.T) {
	tests := []struct {
		in   string
		want WorkloadKind
		err  string
	}{
		{"CloneSet.apps.kruise.io=spec/template", WorkloadKind{Group: "apps.kruise.io", Kind: "CloneSet", Path: "spec/template"}, ""},
		{"PodTemplate=template", WorkloadKind{Kind: "PodTemplate", Path: "template"}, ""},
		{"CloneSet.apps.kruise.io", WorkloadKind{}, "want Kind.group=path"},
	}
	for _, tt := range tests {
		got, err := ParseWorkload(tt.in)
		if tt.err != "" {
			require.ErrorContains(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}
