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
		{"null", "data.k: expected a string, found null (write \"\" for an empty value: the API server stores null as \"\" when it creates the object, but a patch, such as kubectl apply and helm upgrade send, removes the key)"},
		{"2001-12-14", "data.k: expected a string, found a timestamp"},
		{"{a: b}", "data.k: expected a string, found a map"},
		{"[a]", "data.k: expected a string, found a list"},
		{"*x", "data.k: expected a string, found an alias"},
		// YAML 1.1 booleans: yaml.v3 reads strings, kubectl and Helm
		// (sigs.k8s.io/yaml) booleans the API server refuses.
		{"yes", "data.k: expected a string, found a boolean (quote it)"},
		{"No", "data.k: expected a string, found a boolean (quote it)"},
		{"ON", "data.k: expected a string, found a boolean (quote it)"},
		{"off", "data.k: expected a string, found a boolean (quote it)"},
		{"y", "data.k: expected a string, found a boolean (quote it)"},
		{"N", "data.k: expected a string, found a boolean (quote it)"},
		{"0b101", "data.k: expected a string, found a number (quote it)"},
		{"1_000", "data.k: expected a string, found a number (quote it)"},
		// yaml.v3 reads a sign after 0o or 0b (0o-7 is -7); YAML 1.1 a
		// string after 0o only.
		{"0o-7", "data.k: expected a string, found a number (quote it)"},
		{"0b+1", "data.k: expected a string, found a number (quote it)"},
		{".inf", "data.k: expected a string, found a number (quote it)"},
		{"~", "data.k: expected a string, found null (write \"\" for an empty value: the API server stores null as \"\" when it creates the object, but a patch, such as kubectl apply and helm upgrade send, removes the key)"},
		// kubectl stores a !!binary value decoded, yaml.v3 keeps its text.
		{"!!binary aGk=", "data.k: expected a string, found a !!binary value"},
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

// TestReadContentRefusesKeysKubectlRenames: sigs.k8s.io/yaml stores a key
// YAML 1.1 reads as a boolean or number under its JSON text ("on" as
// "true", "010" as "8"), so hashing its spelling would hash a key the API
// server does not hold. Keys stored as written are read.
func TestReadContentRefusesKeysKubectlRenames(t *testing.T) {
	for key, want := range map[string]string{
		"on":  `data: key "on" is a boolean to kubectl and Helm (sigs.k8s.io/yaml), which store it under another name or refuse it (quote it)`,
		"No":  `data: key "No" is a boolean to kubectl and Helm (sigs.k8s.io/yaml), which store it under another name or refuse it (quote it)`,
		"010": `data: key "010" is a number to kubectl and Helm (sigs.k8s.io/yaml), which store it under another name or refuse it (quote it)`,
		"1e3": `data: key "1e3" is a number to kubectl and Helm (sigs.k8s.io/yaml), which store it under another name or refuse it (quote it)`,
		"~":   `data: key "~" is null to kubectl and Helm (sigs.k8s.io/yaml), which store it under another name or refuse it (quote it)`,
		// A key that is no scalar has no text: the error says what it is.
		"[a]":    "data: a key is a list, not a string: kubectl and Helm (sigs.k8s.io/yaml) refuse it",
		"{a: 1}": "data: a key is a map, not a string: kubectl and Helm (sigs.k8s.io/yaml) refuse it",
		"'on'":   "",
		"true":   "",
		"10":     "",
		"app.y":  "",
	} {
		t.Run(key, func(t *testing.T) {
			n, err := yaml.Parse("kind: ConfigMap\ndata:\n  " + key + ": v\n")
			require.NoError(t, err)
			c, err := inject.ReadContent(n.YNode(), hashing.KindConfigMap, "ns", "cfg")
			if want != "" {
				require.EqualError(t, err, want)
				return
			}
			require.NoError(t, err)
			require.Len(t, c.Keys, 1)
		})
	}
}
