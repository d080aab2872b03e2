package fn

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/benchgen"
)

// readBoth reads input with readResourceList (one parse where it can) and
// readResourceListTwice (check, then kio), checks the items as RunBytes
// does before it writes them, writes both results back, and reports any
// difference: the items, the functionConfig and results, the wrapping, the
// written ResourceList or the error.
func readBoth(input []byte) error {
	var once, twice bytes.Buffer
	rw1, items1, err1 := readResourceList(input, &once)
	rw2, items2, err2 := readResourceListTwice(input, &twice)
	if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
		return fmt.Errorf("errors differ: once %w, twice %w", err1, err2)
	}
	if err1 != nil {
		return nil
	}
	if len(items1) != len(items2) {
		return fmt.Errorf("%d items once, %d twice", len(items1), len(items2))
	}
	cerr1, cerr2 := checkItems(items1), checkItems(items2)
	if (cerr1 == nil) != (cerr2 == nil) || (cerr1 != nil && cerr1.Error() != cerr2.Error()) {
		return fmt.Errorf("item checks differ: once %w, twice %w", cerr1, cerr2)
	}
	if cerr1 != nil {
		// RunBytes stops here: nothing is written.
		return nil
	}
	if rw1.WrappingKind != rw2.WrappingKind || rw1.WrappingAPIVersion != rw2.WrappingAPIVersion {
		return fmt.Errorf("wrapping %s %s once, %s %s twice", rw1.WrappingAPIVersion, rw1.WrappingKind, rw2.WrappingAPIVersion, rw2.WrappingKind)
	}
	if (rw1.FunctionConfig == nil) != (rw2.FunctionConfig == nil) || (rw1.Results == nil) != (rw2.Results == nil) {
		return fmt.Errorf("functionConfig or results present in one read only")
	}
	werr1, werr2 := rw1.Write(items1), rw2.Write(items2)
	if (werr1 == nil) != (werr2 == nil) {
		return fmt.Errorf("write errors differ: once %w, twice %w", werr1, werr2)
	}
	if once.String() != twice.String() {
		return fmt.Errorf("written ResourceLists differ:\n--- once\n%s\n--- twice\n%s", once.String(), twice.String())
	}
	return nil
}

func TestReadResourceListOnce(t *testing.T) {
	const item = "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: c\n  data:\n    k: |\n      line one\n      line two\n"
	inputs := map[string]string{
		"items":                  "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + item,
		"functionConfig":         "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + item + "functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  data: {prefix: x.dev}\n",
		"results":                "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + item + "results:\n- message: m\n  severity: info\n",
		"List":                   "apiVersion: v1\nkind: List\nitems:\n" + item,
		"CRLF":                   strings.ReplaceAll("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"+item, "\n", "\r\n"),
		"indented sequence":      "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n  - apiVersion: v1\n    kind: Secret\n    metadata: {name: s}\n    stringData: {a: b}\n",
		"no items":               "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig: {apiVersion: v1, kind: ConfigMap}\n",
		"null items":             "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: null\nfunctionConfig: {apiVersion: v1, kind: ConfigMap}\n",
		"empty items":            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n",
		"alias (read twice)":     "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n  data: {a: &v x, b: *v}\n",
		"merge key":              "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n  data: {<<: {a: x}, b: y}\n",
		"key twice":              "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n  data: {a: x, a: y}\n",
		"items twice":            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nitems: []\n",
		"items not a list":       "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: {a: b}\n",
		"item not an object":     "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [x]\n",
		"separator first":        "---\napiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + item,
		"comments":               "# head\napiVersion: config.kubernetes.io/v1 # v\nkind: ResourceList\nitems:\n# before\n" + item + "# tail\n",
		"bad metadata":           "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nmetadata: x\nitems:\n" + item,
		"not a ResourceList":     "apiVersion: v1\nkind: ConfigMap\nitems:\n" + item,
		"separator in a literal": "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n  data:\n    k: |\n      a\n---\n",
	}
	inputs["generated"] = string(benchgen.ResourceList(benchgen.Spec{Deployments: 30, ConfigMaps: 20, Secrets: 5, ConfigMapBytes: 200}))
	golden, err := filepath.Glob("../testdata/fn/*/input.yaml")
	require.NoError(t, err)
	for _, g := range golden {
		b, err := os.ReadFile(g)
		require.NoError(t, err)
		if isResourceListText(b) {
			inputs[g] = string(b)
		}
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, readBoth([]byte(in)))
		})
	}
}

func isResourceListText(b []byte) bool { return bytes.Contains(b, []byte("kind: ResourceList")) }

// FuzzReadResourceList holds the one-parse read to the check-then-kio read
// on any input.
func FuzzReadResourceList(f *testing.F) {
	f.Add([]byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n"))
	f.Add([]byte("kind: List\nitems: [{a: &x 1, b: *x}]\nfunctionConfig: {k: v}\nresults: []\n"))
	f.Add([]byte("kind: ResourceList\r\nitems:\r\n  - a: b\r\n---\r\n"))
	// Items as the shared corpus writes them: a Secret whose stringData
	// holds a YAML document in a "|-" block, quoted keys and values, a
	// Deployment reading it by key next to an optional ConfigMap key, a
	// kpt ConfigMap functionConfig.
	f.Add([]byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    labels:\n      app.kubernetes.io/name: alertmanager\n    name: alertmanager-main\n    namespace: monitoring\n  stringData:\n    alertmanager.yaml: |-\n      \"global\":\n        \"resolve_timeout\": \"5m\"\n      \"receivers\":\n      - \"name\": \"Default\"\n  type: Opaque\n"))
	f.Add([]byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: argocd-server}\n  spec:\n    template:\n      spec:\n        containers:\n        - env:\n          - name: REDIS_PASSWORD\n            valueFrom:\n              secretKeyRef:\n                key: auth\n                name: argocd-redis\n          - name: ARGOCD_SERVER_INSECURE\n            valueFrom:\n              configMapKeyRef:\n                key: server.insecure\n                name: argocd-cmd-params-cm\n                optional: true\n          name: argocd-server\nfunctionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: config}\n  data: {prefix: example.com}\n"))
	f.Fuzz(func(t *testing.T, input []byte) {
		if err := readBoth(input); err != nil {
			t.Fatal(err)
		}
	})
}
