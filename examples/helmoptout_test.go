package examples_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// TestHelmRenderOptedOutDownstream: examples/helm rendered by Helm 3 and
// Helm 4 and piped through confighash is a first stage; a later one opts
// the chart's Deployment out and runs confighash again, as a stream (the
// opt-out written into the stage's output) and as a kustomize overlay over
// it. Either way the Deployment comes out with none of confighash's
// annotations (the stream byte for byte the first stage's output with the
// opt-out, less the lines the first stage added); the hook Job keeps the
// hash of the first stage, and verify passes.
func TestHelmRenderOptedOutDownstream(t *testing.T) {
	t.Parallel()
	confighash := testtools.Tool(t, "confighash")
	chart := filepath.Join(testtools.RepoRoot(t), "examples", "helm")
	for _, helm := range []string{"helm3", "helm4"} {
		t.Run(helm, func(t *testing.T) {
			t.Parallel()
			env := testtools.HelmHomes(t.TempDir())
			rendered := testtools.Run(t, chart, env, nil, testtools.Tool(t, helm), "template", "web", ".")
			require.Zero(t, rendered.ExitCode, rendered.Stderr)
			stage := testtools.Run(t, chart, nil, []byte(rendered.Stdout), confighash)
			require.Zero(t, stage.ExitCode, stage.Stderr)
			first := testtools.PodHashes(t, stage.Stdout)
			require.NotEmpty(t, first["Deployment//web-greeter"], "the first stage hashes the Deployment\n%s", stage.Stdout)
			require.NotEmpty(t, first["Job//web-greeter-smoke-test"], "and the hook Job\n%s", stage.Stdout)
			// The lines the first stage added to the Deployment.
			added := "      annotations:\n        confighash.dev/hash: " + first["Deployment//web-greeter"] + "\n"
			require.Contains(t, stage.Stdout, added)

			// A later stage in the stream: the opt-out written in, confighash again.
			deployment := "kind: Deployment\nmetadata:\n  name: web-greeter\n"
			optOut := "kind: Deployment\nmetadata:\n  name: web-greeter\n  annotations:\n    confighash.dev/enabled: \"false\"\n"
			require.Contains(t, stage.Stdout, deployment)
			optedOut := strings.Replace(stage.Stdout, deployment, optOut, 1)
			again := testtools.Run(t, chart, nil, []byte(optedOut), confighash)
			require.Zero(t, again.ExitCode, again.Stderr)
			assert.Equal(t, strings.Replace(optedOut, added, "", 1), again.Stdout, "only the lines the first stage added to the Deployment go")
			checkOptedOut(t, confighash, again.Stdout, first["Job//web-greeter-smoke-test"])

			// A kustomize overlay over the first stage that opts out.
			dir := t.TempDir()
			for file, text := range map[string]string{
				"base/all.yaml":           stage.Stdout,
				"base/kustomization.yaml": "resources:\n- all.yaml\n",
				"overlay/confighash.yaml": testtools.ExecFunctionConfig(confighash),
				"overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n" +
					"    metadata:\n      name: web-greeter\n      annotations:\n        confighash.dev/enabled: \"false\"\n" +
					"transformers:\n- confighash.yaml\n",
			} {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, file)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644))
			}
			out, _ := realBuild(t, filepath.Join(dir, "overlay"), nil, true)
			checkOptedOut(t, confighash, out, first["Job//web-greeter-smoke-test"])
		})
	}
}

// checkOptedOut checks a render of examples/helm whose Deployment opts out:
// no hash but the hook Job's, which is job, nothing else of confighash's on
// the Deployment, and verify passes.
func checkOptedOut(t *testing.T, confighash, out, job string) {
	t.Helper()
	assert.Equal(t, map[string]string{"Job//web-greeter-smoke-test": job}, testtools.PodHashes(t, out), out)
	assert.NotRegexp(t, `confighash\.dev/(key-id|external):`, out)
	verify := testtools.Run(t, "", nil, []byte(out), confighash, "verify")
	assert.Zero(t, verify.ExitCode, verify.Stderr)
}
