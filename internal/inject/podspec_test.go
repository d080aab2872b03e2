package inject

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/yamlnorm"
)

var podSpecSeeds = []string{
	"spec:\n  containers:\n  - name: a\n    env:\n    - name: X\n      valueFrom:\n        configMapKeyRef: {name: c, key: k, optional: true}\n    envFrom:\n    - secretRef: {name: s}\n",
	"spec:\n  volumes:\n  - name: v\n    configMap: {name: c, items: [{key: a, path: a}]}\n  - name: p\n    projected:\n      sources:\n      - secret: {name: s, optional: false}\n      - configMap: {name: c2}\n  imagePullSecrets: [{name: pull}]\n",
	"spec:\n  initContainers:\n  - name: i\n    env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: \"1\"}}}]\n  ephemeralContainers:\n  - name: e\n    envFrom: [{configMapRef: {name: c, optional: true}}]\n",
	"spec:\n  volumes:\n  - name: v\n    secret: {secretName: s, items: [{key: k}]}\n  containers: [{name: a, envFrom: [{configMapRef: {name: 1}}]}]\n",
	"spec:\n  containers: &c [{name: a, env: [{name: X, valueFrom: {configMapKeyRef: {name: c, key: k, optional: 'yes'}}}]}]\n",
}

// TestPodSpecReader: the node reader finds the same uses as the JSON
// decode of the same nodes, and refuses nothing the API types accept.
func TestPodSpecReader(t *testing.T) {
	for _, s := range podSpecSeeds {
		compareReaders(t, s)
	}
}

// FuzzPodSpecReader holds the node reader to the JSON decode for any pod
// spec YAML.
func FuzzPodSpecReader(f *testing.F) {
	for _, s := range podSpecSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { compareReaders(t, s) })
}

func compareReaders(t *testing.T, s string) {
	t.Helper()
	node, err := yaml.Parse(s)
	if err != nil || node.YNode().Kind != yaml.MappingNode {
		return
	}
	// Both modes normalise a document before reading it: a key written
	// twice is refused there, aliases are expanded.
	if _, err := yamlnorm.Normalise(node.YNode()); err != nil {
		return
	}
	viaJSON, jsonErr := podSpecViaJSON(node)
	direct, directErr := podSpec(node)
	if directErr != nil && jsonErr == nil {
		t.Fatalf("the node reader refused what the API types accept: %v\n%s", directErr, s)
	}
	if jsonErr != nil || directErr != nil {
		// The JSON path also checks fields the reader skips (an env
		// entry's value, say); nothing to compare.
		return
	}
	if a, b := hashing.Discover(viaJSON), hashing.Discover(direct); !reflect.DeepEqual(a, b) {
		t.Fatalf("readers disagree:\njson   %+v\ndirect %+v\n%s", a, b, s)
	}
}

// TestPodSpecReaderReadsYAML11Booleans: a plain yes, on or y (no, off, n)
// is the boolean kubectl and Helm read (sigs.k8s.io/yaml, YAML 1.1), so a
// reference marked optional that way is optional to confighash too; quoted,
// it is the string the API server refuses (see the errors below).
func TestPodSpecReaderReadsYAML11Booleans(t *testing.T) {
	for _, word := range []string{"yes", "Yes", "YES", "on", "On", "ON", "y", "Y", "true", "no", "No", "NO", "off", "Off", "n", "N", "false"} {
		spec := "spec:\n  containers:\n  - name: a\n" +
			"    envFrom: [{secretRef: {name: s, optional: " + word + "}}]\n" +
			"    env: [{name: X, valueFrom: {configMapKeyRef: {name: c, key: k, optional: " + word + "}}}]\n" +
			"  volumes: [{name: v, configMap: {name: c2, optional: " + word + "}}]\n"
		var kubectl struct{ Spec corev1.PodSpec }
		require.NoError(t, sigsyaml.Unmarshal([]byte(spec), &kubectl), word)
		require.NotNil(t, kubectl.Spec.Containers[0].EnvFrom[0].SecretRef.Optional, word)
		node, err := yaml.Parse(spec)
		require.NoError(t, err)
		direct, err := podSpec(node)
		require.NoError(t, err, word)
		assert.Equal(t, hashing.Discover(&kubectl.Spec), hashing.Discover(direct), word)
		assert.Equal(t, *kubectl.Spec.Containers[0].EnvFrom[0].SecretRef.Optional, *direct.Containers[0].EnvFrom[0].SecretRef.Optional, word)
	}
}

// TestPodSpecReaderErrorsNameTheField: a refused reference names the path
// to the field that is wrong, from the pod spec, and its line: where no
// line can be given (a text the user does not see), the path alone finds
// the field.
func TestPodSpecReaderErrorsNameTheField(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"spec:\n  volumes:\n  - configMap: c\n", "line 3: volumes[0].configMap: expected an object"},
		{"spec:\n  volumes:\n  - secret: {secretName: s, items: x}\n", "line 3: volumes[0].secret.items: expected a list"},
		{"spec:\n  volumes:\n  - projected: {sources: [{configMap: {name: 1}}]}\n", "line 3: volumes[0].projected.sources[0].configMap.name: expected a string"},
		{"spec:\n  volumes:\n  - name: a\n  - secret: {items: [{key: k}, {key: [k]}]}\n", "line 4: volumes[1].secret.items[1].key: expected a string"},
		{"spec:\n  containers:\n  - env: [{valueFrom: {secretKeyRef: [s]}}]\n", "line 3: containers[0].env[0].valueFrom.secretKeyRef: expected an object"},
		{"spec:\n  containers:\n  - env: [{valueFrom: {configMapKeyRef: {name: c, key: 1}}}]\n", "line 3: containers[0].env[0].valueFrom.configMapKeyRef.key: expected a string"},
		{"spec:\n  containers:\n  - envFrom: [{secretRef: {name: s, optional: \"yes\"}}]\n", "line 3: containers[0].envFrom[0].secretRef.optional: expected true or false"},
		{"spec:\n  containers:\n  - envFrom: [{secretRef: {name: s, optional: !!str on}}]\n", "line 3: containers[0].envFrom[0].secretRef.optional: expected true or false"},
		{"spec:\n  containers:\n  - envFrom: [{secretRef: {name: s, optional: 1}}]\n", "line 3: containers[0].envFrom[0].secretRef.optional: expected true or false"},
		{"spec:\n  containers:\n  - name: a\n  - name: b\n    envFrom: 5\n", "line 5: containers[1].envFrom: expected a list"},
		{"spec:\n  initContainers: [{name: 1}]\n", "line 2: initContainers[0].name: expected a string"},
		{"spec:\n  imagePullSecrets: [{name: [x]}]\n", "line 2: imagePullSecrets[0].name: expected a string"},
		{"spec:\n  volumes: 5\n", "line 2: volumes: expected a list"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			node, err := yaml.Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			_, err = podSpec(node)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
		})
	}
}
