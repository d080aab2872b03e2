package cli_test

import (
	"fmt"
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
