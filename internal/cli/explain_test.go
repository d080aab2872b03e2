package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExplainLinesStayNarrow: explain's list of what a workload consumes
// puts the long column, the keys, last, so that no cell is padded to the
// width of another config's key list. Before, a workload reading 40 keys of
// one ConfigMap (as Argo CD's components read argocd-cmd-params-cm) pushed
// "in stream" of every other config of the workload a whole key list to the
// right: lines of 1,000 characters, mostly spaces, on Argo CD's install.yaml.
func TestExplainLinesStayNarrow(t *testing.T) {
	var env strings.Builder
	for i := range 40 {
		fmt.Fprintf(&env, "        - {name: V%d, valueFrom: {configMapKeyRef: {name: params, key: some.long.parameter.name.%d, optional: true}}}\n", i, i)
	}
	input := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: params}\ndata: {a: b}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: whole}\ndata: {a: b}\n---\n" +
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        env:\n" +
		env.String() + "        envFrom: [{configMapRef: {name: whole}}, {secretRef: {name: outside}}]\n"
	code, out, errOut := run(t, input, "explain", "--quiet")
	require.Equal(t, 0, code, errOut)
	t.Log(out)
	assert.Regexp(t, `(?m)^  ConfigMap +whole +in stream +all keys$`, out)
	assert.Regexp(t, `(?m)^  Secret +outside +EXTERNAL +all keys$`, out)
	assert.Regexp(t, `(?m)^  ConfigMap +params +in stream, optional +keys some.long.parameter.name.0,`, out)
	assert.NotRegexp(t, ` {25}`, out, "no cell padded to a key list's width")
}

// TestVerifyLiveStateTheControllerRolled: kubectl get -o yaml of a
// workload the controller rolled after its ConfigMap was edited in the
// cluster holds the render's older hash next to the controller's current
// one. verify still fails (it guards renders, and this is not one) but says
// what it sees, and explain too, rather than send the user looking for a
// kustomization that renamed the configs.
func TestVerifyLiveStateTheControllerRolled(t *testing.T) {
	cm := func(level string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: shop}\ndata: {LOG_LEVEL: " + level + "}\n"
	}
	workload := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  template:\n    metadata:\n      annotations: {%s}\n" +
		"    spec:\n      containers:\n      - name: web\n        envFrom: [{configMapRef: {name: app}}]\n"
	hashOf := func(level string) string {
		code, out, errOut := run(t, cm(level)+"---\n"+fmt.Sprintf(workload, ""), "explain", "--json")
		require.Equal(t, 0, code, errOut)
		var list []struct{ Hash string }
		require.NoError(t, json.Unmarshal([]byte(out), &list))
		require.Len(t, list, 1)
		return list[0].Hash
	}
	rendered, live := hashOf("info"), hashOf("debug")
	require.NotEqual(t, rendered, live)
	input := cm("debug") + "---\n" + fmt.Sprintf(workload, `confighash.dev/hash: "`+rendered+`", confighash.dev/controller-hash: "`+live+`"`)

	code, out, errOut := run(t, input, "verify")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "1 whose confighash.dev/controller-hash is current: the controller rolled it after its configs changed in the cluster")
	assert.Contains(t, errOut, "kubectl confighash status")
	assert.NotContains(t, errOut, "kustomization")

	code, out, errOut = run(t, input, "explain")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "(the input has "+rendered+", older than the controller's current confighash.dev/controller-hash: the controller rolled it after its configs changed in the cluster)")

	// A controller's hash that is not current either: the render's hint.
	stale := cm("trace") + "---\n" + fmt.Sprintf(workload, `confighash.dev/hash: "`+rendered+`", confighash.dev/controller-hash: "`+live+`"`)
	code, _, errOut = run(t, stale, "verify")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "with another value: the configs changed after the render")
	assert.NotContains(t, errOut, "controller-hash is current")
}

// TestDirectoryInsteadOfARender: explain, verify and diff read renders; a
// directory (a kustomization, a chart) named instead is refused with what
// to run, and nothing on standard output.
func TestDirectoryInsteadOfARender(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "render.yaml")
	require.NoError(t, os.WriteFile(file, []byte(configMap), 0o600))
	for _, args := range [][]string{{"explain", dir}, {"verify", dir}, {"diff", dir, file}, {"diff", file, dir}, {"diff", "--exit-code", dir, file}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := run(t, "", args...)
			assert.NotZero(t, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, dir+" is a directory: "+args[0]+" reads a render (the output of kustomize build "+dir+", or of helm template)")
		})
	}
}
