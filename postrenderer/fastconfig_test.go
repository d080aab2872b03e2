package postrenderer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/yamlnode"
)

var scanCases = []string{
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: b\n  labels:\n    x: web\ndata:\n  k: v\n  q: 'it''s'\n  d: \"quoted # not a comment\"\n  c: plain # comment\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  f: |\n    line 1\n\n      indented\n    last\n\n  g: |-\n    stripped\n  h: |+\n    kept\n\n\nbinaryData:\n  b: AAEC\n",
	"---\n# Source: x\napiVersion: v1\nkind: Secret\ntype: Opaque\nmetadata:\n  name: s\n  annotations:\n    a: '{\"json\": true}'\ndata:\n  p: czNjcjN0\nstringData:\n  p: override\n  u: user\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n    name: four-space\ndata:\n    k: |\n        deep\n    e: \"\"\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: empty\ndata:\n",
}

// TestScanConfigMatchesParser: whatever the scanner accepts, it reads as the
// parser path does — the same hash for a workload consuming everything.
func TestScanConfigMatchesParser(t *testing.T) {
	for i, text := range scanCases {
		fast, ok := scanConfig([]byte(text), &scanBuffers{})
		require.True(t, ok, "case %d should take the fast path", i)
		assert.Equal(t, hashVia(t, []byte(text), false), hashVia(t, []byte(text), true), "case %d", i)
		assert.NotEmpty(t, fast.Name)
	}
}

// hashVia hashes the config in text for a workload that consumes all of it,
// through the fast scanner or the parser.
func hashVia(t *testing.T, text []byte, fast bool) string {
	t.Helper()
	h, err := hashConfig(text, fast)
	require.NoError(t, err)
	return h
}

func hashConfig(text []byte, fast bool) (string, error) {
	var d inject.Doc
	if fast {
		c, ok := scanConfig(text, &scanBuffers{})
		if !ok {
			return "", errNotFast
		}
		d.Config = &c
	} else {
		node, err := parse(text)
		if err != nil {
			return "", err
		}
		d.Node = node
	}
	var kind, name string
	if d.Config != nil {
		kind, name = string(d.Config.Kind), d.Config.Name
	} else {
		kind = yamlnode.Child(d.Node.YNode(), "kind").Value
		name = yamlnode.Path(d.Node.YNode(), "metadata", "name").Value
	}
	ref := "configMapRef"
	if kind == "Secret" {
		ref = "secretRef"
	}
	workload, err := parse([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w, namespace: " + ns(d) + "}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        envFrom:\n        - " + ref + ": {name: " + name + "}\n"))
	if err != nil {
		return "", err
	}
	r, err := inject.AnalyzeDocs([]inject.Doc{d, {Node: workload, Index: 1}}, inject.Options{DefaultNamespace: "default"})
	if err != nil {
		return "", err
	}
	if r.Workloads[0].Hash == "" {
		return "", fmt.Errorf("the workload did not find the config: external %q", r.Workloads[0].ExternalValue())
	}
	return r.Workloads[0].Hash, nil
}

func ns(d inject.Doc) string {
	if d.Config != nil {
		if d.Config.Namespace == "" {
			return "default"
		}
		return d.Config.Namespace
	}
	if v := yamlnode.Path(d.Node.YNode(), "metadata", "namespace"); v != nil {
		return v.Value
	}
	return "default"
}

type notFast struct{}

func (notFast) Error() string { return "not on the fast path" }

var errNotFast error = notFast{}

// yaml11Cases are configs whose keys or values kubectl and Helm
// (sigs.k8s.io/yaml, YAML 1.1) read as something other than the string
// yaml.v3 reads, with the error the parser path gives.
var yaml11Cases = []struct{ text, err string }{
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: yes\n", "data.k: expected a string, found a boolean (quote it)"},
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: Off # comment\n", "data.k: expected a string, found a boolean (quote it)"},
	{"apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\nstringData:\n  k: N\n", "stringData.k: expected a string, found a boolean (quote it)"},
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: 1_000\n", "data.k: expected a string, found a number (quote it)"},
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: 0o+7\n", "data.k: expected a string, found a number (quote it)"},
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  on: v\n", `data: key "on" is a boolean to kubectl and Helm (sigs.k8s.io/yaml), which store it under another name or refuse it (quote it)`},
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  010: v\n", `data: key "010" is a number to kubectl and Helm (sigs.k8s.io/yaml), which store it under another name or refuse it (quote it)`},
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\nbinaryData:\n  1e3: AAEC\n", `binaryData: key "1e3" is a number to kubectl and Helm (sigs.k8s.io/yaml), which store it under another name or refuse it (quote it)`},
}

// TestScanConfigRefusesWhatKubectlReadsOtherwise: the scanner leaves a
// YAML 1.1 boolean or number, as a value or a key, to the parser, which
// names it.
func TestScanConfigRefusesWhatKubectlReadsOtherwise(t *testing.T) {
	for _, tc := range yaml11Cases {
		_, ok := scanConfig([]byte(tc.text), &scanBuffers{})
		assert.False(t, ok, "the scanner took %q", tc.text)
		_, err := hashConfig([]byte(tc.text), false)
		assert.ErrorContains(t, err, tc.err, "%q", tc.text)
	}
}

// TestLongKeysGoToTheParser: YAML takes a key written without "? " only
// within 1024 characters, so neither the config scanner nor the header scan
// reads a longer one: the parser refuses it, in a ConfigMap and in a
// document of a kind otherwise copied unread.
func TestLongKeysGoToTheParser(t *testing.T) {
	long := strings.Repeat("k", 1100)
	for _, text := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  " + long + ": v\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n" + long + ": v\n",
	} {
		_, ok := scanConfig([]byte(text), &scanBuffers{})
		assert.False(t, ok, "the config scanner read the key")
		if h, ok := readHeader([]byte(text)); ok {
			assert.Equal(t, "ConfigMap", h.kind, "the header scan read a long top-level key")
		}
		_, _, err := Process([]byte(text), inject.Options{})
		require.Error(t, err, "a key YAML refuses")
	}
	_, ok := scanConfig([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  "+strings.Repeat("k", 900)+": v\n"), &scanBuffers{})
	assert.True(t, ok, "a key within the limit is read")
}

// FuzzScanConfig holds the scanner to the parser: for any document it
// accepts, the parser must accept it too and give the same hash.
func FuzzScanConfig(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	for _, c := range yaml11Cases {
		f.Add([]byte(c.text))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		fastHash, err := hashConfig(text, true)
		if err != nil {
			return
		}
		slowHash, err := hashConfig(text, false)
		if err != nil {
			t.Fatalf("the scanner accepted what the parser refuses: %v\n%q", err, text)
		}
		if fastHash != slowHash {
			t.Fatalf("scanner and parser disagree on\n%q", text)
		}
	})
}

// TestConfigsReadAsKubectlReadsThem holds stream mode to what kubectl and
// Helm store (sigs.k8s.io/yaml) for ConfigMap values the config scanner
// read in its own way: a block scalar that ends the stream without a line
// feed (a file saved without a final newline) was hashed with one, and the
// line breaks of YAML 1.1 that are not line feeds (U+0085, U+2028, U+2029),
// which YAML readers break lines at, were hashed as text. Each value must
// give the hash of the value kubectl stores, or an error where kubectl
// refuses the document.
func TestConfigsReadAsKubectlReadsThem(t *testing.T) {
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        envFrom:\n        - configMapRef: {name: cfg}\n---\n"
	for _, value := range []string{
		"|\n    last line", "|+\n    last line", "|\n    a\n\n    b", "|\n    a\n    b  ",
		"\"a\u0085b\"", "'a\u0085b'", "\"a\u2028b\"", "'a\u2029b'",
		"a\u0085b", "a\u2028b\n", "|\n    a\u2029b\n",
	} {
		t.Run(fmt.Sprintf("%q", value), func(t *testing.T) {
			cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: " + value
			_, report, err := Process([]byte(deploy+cm), inject.Options{})
			j, kubectlErr := sigsyaml.YAMLToJSON([]byte(cm))
			if kubectlErr != nil {
				require.Error(t, err, "kubectl refuses it: %v", kubectlErr)
				return
			}
			require.NoError(t, err)
			_, want, err := Process(append([]byte(deploy), j...), inject.Options{})
			require.NoError(t, err)
			assert.Equal(t, want.Workloads[0].Hash, report.Workloads[0].Hash, "kubectl stores %s", j)
		})
	}
}

// TestScanConfigLeavesClusterFilledToTheParser: a config the cluster fills
// in (hashing.ClusterFilled) is left to the parser path, which keeps it out
// of the hash: a token Secret, a ConfigMap with either OpenShift CA bundle
// marker, whatever its value (the parser decides). A marker name as the
// other of label and annotation, or in data, is read as any.
func TestScanConfigLeavesClusterFilledToTheParser(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ca\n%sdata:\n  k: v\n"
	for _, tc := range []struct {
		text string
		fast bool
	}{
		{"apiVersion: v1\nkind: Secret\ntype: kubernetes.io/service-account-token\nmetadata:\n  name: tok\n", false},
		{fmt.Sprintf(cm, "  annotations:\n    app: web\n    service.beta.openshift.io/inject-cabundle: \"true\"\n"), false},
		{fmt.Sprintf(cm, "  annotations:\n    service.beta.openshift.io/inject-cabundle: \"false\"\n"), false},
		{fmt.Sprintf(cm, "  labels:\n    config.openshift.io/inject-trusted-cabundle: \"true\"\n"), false},
		{fmt.Sprintf(cm, "  labels:\n    service.beta.openshift.io/inject-cabundle: \"true\"\n"), true},
		{fmt.Sprintf(cm, "  annotations:\n    config.openshift.io/inject-trusted-cabundle: \"true\"\n"), true},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ca\ndata:\n  service.beta.openshift.io/inject-cabundle: \"true\"\n", true},
	} {
		_, ok := scanConfig([]byte(tc.text), &scanBuffers{})
		assert.Equal(t, tc.fast, ok, "%q", tc.text)
	}
}
