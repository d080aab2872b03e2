package inject_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/inject"
)

func TestReadContentNamesWhatIsNotAString(t *testing.T) {
	tests := []struct{ value, want string }{
		{"1", "data.k: expected a string, found a number (quote it)"},
		{"1.5", "data.k: expected a string, found a number (quote it)"},
		{"true", "data.k: expected a string, found a boolean (quote it)"},
		{"null", "data.k: expected a string, found null"},
		{"2001-12-14", "data.k: expected a string, found a timestamp"},
		{"{a: b}", "data.k: expected a string, found a map"},
		{"[a]", "data.k: expected a string, found a list"},
		{"*x", "data.k: expected a string, found an alias"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			n, err := yaml.Parse("kind: ConfigMap\nx: &x a\ndata:\n  k: " + tt.value + "\n")
			require.NoError(t, err)
			_, err = inject.ReadContent(n.YNode(), hashing.KindConfigMap, "ns", "cfg")
			require.EqualError(t, err, tt.want)
		})
	}
}
