package examples_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// jobTree is a kustomization under namePrefix whose Job (not suspended, so
// the API server treats its pod template as immutable once it started)
// reads a generated ConfigMap with a hash suffix and one without. %s is the
// namespace.
var jobTree = map[string]string{
	"kustomization.yaml": `namePrefix: prod-
namespace: %s
resources:
- job.yaml
configMapGenerator:
- name: settings
  literals:
  - SETTING=one
- name: mode
  options:
    disableNameSuffixHash: true
  literals:
  - MODE=a
transformers:
- confighash.yaml
`,
	"job.yaml": kubetest.Workload{Kind: "Job", Name: "migrate",
		Env: []string{kubetest.EnvKey("mode", "MODE")}, EnvFrom: []string{"{configMapRef: {name: settings}}"}}.YAML(),
}

// jobRender builds jobTree for namespace ns with the given edits of the
// kustomization (old, new pairs), with confighash (exec) or without.
func jobRender(t *testing.T, ns string, exec bool, edits ...string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range jobTree {
		if name == "kustomization.yaml" {
			content = strings.NewReplacer(edits...).Replace(fmt.Sprintf(content, ns))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	fn := testtools.ExecFunctionConfig(testtools.Tool(t, "confighash"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "confighash.yaml"), []byte(fn), 0o644))
	out, _ := realBuild(t, dir, nil, exec)
	return out
}

// jobHashes reads the hash annotations on the render's Job and on its pod
// template.
func jobHashes(t *testing.T, render string) (onJob, onTemplate string) {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(render))
	require.NoError(t, err)
	for _, n := range nodes {
		if n.GetKind() != "Job" {
			continue
		}
		tpl, err := n.Pipe(kyaml.Lookup("spec", "template"))
		require.NoError(t, err)
		return n.GetAnnotations()[hashKey], tpl.GetAnnotations()[hashKey]
	}
	t.Fatalf("no Job in the render:\n%s", render)
	return "", ""
}

// oldLayout moves a render's Job hash to its pod template, where
// confighash wrote it before it wrote it on the Job.
func oldLayout(t *testing.T, render string) string {
	t.Helper()
	hash, _ := jobHashes(t, render)
	require.NotEmpty(t, hash)
	out := strings.Replace(render, "    "+hashKey+": "+hash+"\n", "", 1)
	out = strings.Replace(out, "  template:\n    metadata:\n", "  template:\n    metadata:\n      annotations:\n        "+hashKey+": "+hash+"\n", 1)
	_, onTemplate := jobHashes(t, out)
	require.Equal(t, hash, onTemplate, "the old layout:\n%s", out)
	return out
}

// applyStarted applies a render and waits until the Job controller has
// started its Job: from then on the API server refuses any change of the
// Job's pod template (before, it lets a suspended Job's template
// annotations change). No kubelet runs its pod.
func (c *cluster) applyStarted(t *testing.T, render string) *batchv1.Job {
	t.Helper()
	c.apply(t, render)
	var job *batchv1.Job
	kubetest.Eventually(t, time.Minute, 100*time.Millisecond, "the Job's start", func(ctx context.Context) (bool, error) {
		var err error
		job, err = c.client.BatchV1().Jobs(c.namespace).Get(ctx, "prod-migrate", metav1.GetOptions{})
		return err == nil && job.Status.StartTime != nil, err
	})
	return job
}

// reapply applies a render over the Job and returns the API server's error.
func (c *cluster) reapply(t *testing.T, render string) error {
	t.Helper()
	return kubetest.Apply(t.Context(), c.dyn, c.mapper, strings.NewReader(render),
		kubetest.ApplyOptions{Namespace: c.namespace, FieldManager: "gitops"})
}

// TestKustomizeJobApply renders a kustomization whose Job reads generated
// ConfigMaps through kustomize with confighash and server-side applies it
// (forced, as Argo CD and Flux apply), then a render after a generator input
// changed, over the started Job. The hash is on the Job, verify passes, and
// re-applying succeeds where the input has no hash suffix, the Job's hash
// following it; a suffixed input renames the ConfigMap in the Job's pod
// template, which the API server refuses with or without confighash. The
// layout before (the hash on the Job's pod template) is refused.
//
// Not parallel with other tests: it runs the Job controller (startJobController)
// while its subtests run, and TestRealChartHooks runs its own.
func TestKustomizeJobApply(t *testing.T) {
	startJobController(t)
	const unsuffixed, suffixed = "MODE=a", "SETTING=one"
	t.Run("unsuffixed input changed: applied, the hash follows", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, "job-unsuffixed")
		first, second := jobRender(t, c.namespace, true), jobRender(t, c.namespace, true, unsuffixed, "MODE=b")
		for _, render := range []string{first, second} {
			onJob, onTemplate := jobHashes(t, render)
			assert.NotEmpty(t, onJob, "the Job's hash, on the Job\n%s", render)
			assert.Empty(t, onTemplate, "nothing on the Job's pod template\n%s", render)
			verify := testtools.Run(t, "", nil, []byte(render), testtools.Tool(t, "confighash"), "verify")
			assert.Zero(t, verify.ExitCode, "confighash verify\n%s", verify.Stderr)
			again := testtools.Run(t, "", nil, []byte(render), testtools.Tool(t, "confighash"))
			assert.Equal(t, render, again.Stdout, "confighash again changes nothing")
		}
		h1, _ := jobHashes(t, first)
		h2, _ := jobHashes(t, second)
		require.NotEqual(t, h1, h2, "the hash follows MODE")

		job := c.applyStarted(t, first)
		assert.Equal(t, h1, job.Annotations[hashKey])
		require.NoError(t, c.reapply(t, second), "the changed render, over the started Job")
		job, err := c.client.BatchV1().Jobs(c.namespace).Get(t.Context(), "prod-migrate", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, h2, job.Annotations[hashKey], "the live Job's hash follows the render")
		assert.NotContains(t, job.Spec.Template.Annotations, hashKey)
		require.NoError(t, c.reapply(t, second), "the same render again")
	})
	t.Run("suffixed input changed: refused, as without confighash", func(t *testing.T) {
		t.Parallel()
		for _, exec := range []bool{true, false} {
			c := newCluster(t, fmt.Sprintf("job-suffixed-%t", exec))
			c.applyStarted(t, jobRender(t, c.namespace, exec))
			err := c.reapply(t, jobRender(t, c.namespace, exec, suffixed, "SETTING=two"))
			require.Error(t, err, "the ConfigMap's new name in the Job's pod template (confighash: %t)", exec)
			assert.Contains(t, err.Error(), "field is immutable")
		}
	})
	t.Run("the hash on the pod template: refused", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, "job-old-layout")
		first := oldLayout(t, jobRender(t, c.namespace, true))
		c.applyStarted(t, first)
		// A config change.
		err := c.reapply(t, oldLayout(t, jobRender(t, c.namespace, true, unsuffixed, "MODE=b")))
		require.Error(t, err, "a changed hash on a started Job's pod template")
		assert.Contains(t, err.Error(), "field is immutable")
		// The same config, rendered by this confighash: the hash leaves the
		// pod template, which is a change of it too.
		err = c.reapply(t, jobRender(t, c.namespace, true))
		require.Error(t, err, "the hash moved off a started Job's pod template")
		assert.Contains(t, err.Error(), "field is immutable")
	})
	t.Run("suspended and never started: the pod template's annotations may change", func(t *testing.T) {
		// Why the subtests above wait for the start: a test of a suspended
		// Job passes with the hash on its pod template too.
		t.Parallel()
		c := newCluster(t, "job-suspended")
		suspend := func(render string) string {
			return strings.Replace(render, "spec:\n  template:\n", "spec:\n  suspend: true\n  template:\n", 1)
		}
		c.apply(t, suspend(oldLayout(t, jobRender(t, c.namespace, true))))
		require.NoError(t, c.reapply(t, suspend(oldLayout(t, jobRender(t, c.namespace, true, unsuffixed, "MODE=b")))))
	})
}
