package examples_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// helmFoldConfig is a ConfigMap whose folded blocks (>, >-, >+) hold a line
// led by a tab in the middle and at the end, before blank lines and a
// more-indented line: Helm 4 writes such a block anew around any
// post-renderer, with blank lines added.
const helmFoldConfig = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-fold\ndata:\n" +
	"  clip: >\n    one\n    \tled by a tab\n\n\n    two\n" +
	"  strip: >-\n    one\n    \tled by a tab\n      more indented\n    two\n" +
	"  keep: >+\n    one\n    \tlast, led by a tab\n\n\n" +
	"  plain: value\n"

// helmFoldDeployment reads the ConfigMap.
const helmFoldDeployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-app\nspec:\n" +
	"  selector:\n    matchLabels: {app: fold}\n  template:\n    metadata:\n      labels: {app: fold}\n    spec:\n" +
	"      containers:\n      - name: app\n        image: nginx\n        envFrom:\n        - configMapRef: {name: {{ .Release.Name }}-fold}\n"

// TestHelmFoldedTabLines runs the post-render checks on a chart whose
// ConfigMap holds folded blocks with tab-led lines, with each Helm: the
// objects Helm installs equal those without confighash's annotations, and
// the Deployment's hash is the one computed independently from what Helm
// sends.
func TestHelmFoldedTabLines(t *testing.T) {
	t.Parallel()
	chart := t.TempDir()
	for name, text := range map[string]string{
		"Chart.yaml":                "apiVersion: v2\nname: fold\nversion: 0.1.0\n",
		"templates/configmap.yaml":  helmFoldConfig,
		"templates/deployment.yaml": helmFoldDeployment,
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(chart, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(chart, name), []byte(text), 0o644))
	}
	eachHelmWithIdentity(t, "", func(t *testing.T, h testtools.Helm) {
		r := checkPostRender(t, h, chart, false)
		require.Zero(t, r.exitCode, r.stderr)
		require.NotEmpty(t, r.hashes["Deployment/"+realNamespace+"/web-app"], "the Deployment's hash: %v", r.hashes)
	})
}

// nodeJSON returns the JSON of n's value, decoded from the node itself:
// kyaml's MarshalJSON writes the node as YAML and reads it back, and yaml.v3
// writes a folded block with a tab-led line with blank lines added, another
// value.
func nodeJSON(t *testing.T, n *kyaml.RNode) []byte {
	t.Helper()
	var v any
	require.NoError(t, n.YNode().Decode(&v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestHelmFoldedTabFirstLine pins the limit docs/helm.md states: a folded
// block whose first line starts with a tab needs an indentation indicator,
// which yaml.v3 drops when Helm 4 writes the document anew around any
// post-renderer, so Helm 4 refuses the render through identity as through
// confighash; Helm 3 renders it through confighash.
func TestHelmFoldedTabFirstLine(t *testing.T) {
	t.Parallel()
	chart := t.TempDir()
	for name, text := range map[string]string{
		"Chart.yaml":               "apiVersion: v2\nname: fold\nversion: 0.1.0\n",
		"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tab-first\ndata:\n  first: >2\n    \tled by a tab\n    then plain\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(chart, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(chart, name), []byte(text), 0o644))
	}
	eachHelmWithIdentity(t, "", func(t *testing.T, h testtools.Helm) {
		base := []string{"template", "web", chart, "--namespace", realNamespace}
		post := h.Run(t, nil, append(slices.Clone(base), realPostRenderer(t, h)...)...)
		if h.Version == 3 {
			require.Zero(t, post.ExitCode, post.Stderr)
			return
		}
		identity := h.Run(t, nil, append(slices.Clone(base), "--post-renderer", "identity")...)
		for name, res := range map[string]testtools.Result{"identity": identity, "confighash": post} {
			assert.NotZero(t, res.ExitCode, "%s: %s", name, res.Stdout)
			assert.Contains(t, res.Stderr, "found a tab character where an indentation space is expected", name)
		}
	})
}
