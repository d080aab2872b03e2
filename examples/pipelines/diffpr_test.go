package pipelines_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// fixtureApp is the app: web reads LOG_LEVEL of app, api reads PORT.
func fixtureApp() string {
	return `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  LOG_LEVEL: info
  PORT: "8080"
---
` + kubetest.Workload{Name: "web", Env: []string{kubetest.EnvKey("app", "LOG_LEVEL")}}.YAML() + `---
` + kubetest.Workload{Name: "api", Env: []string{kubetest.EnvKey("app", "PORT")}}.YAML()
}

// fixtureRepo makes a git repository with two commits: the app as a
// kustomization and as a Helm chart, then the same with edit applied.
func fixtureRepo(t *testing.T, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(app string) {
		files := map[string]string{
			"kustomization.yaml":       "namespace: shop\nresources: [app.yaml]\n",
			"app.yaml":                 app,
			"chart/Chart.yaml":         "apiVersion: v2\nname: app\nversion: 0.1.0\n",
			"chart/templates/app.yaml": app,
		}
		for name, content := range files {
			p := filepath.Join(dir, name)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		}
	}
	git := func(args ...string) {
		t.Helper()
		res := testtools.Run(t, dir, gitEnv(), nil, "git", args...)
		require.Equal(t, 0, res.ExitCode, "git %v: %s", args, res.Stderr)
	}
	git("init", "--quiet", "--initial-branch=main")
	write(fixtureApp())
	git("add", ".")
	git("commit", "--quiet", "-m", "base")
	write(edit(fixtureApp()))
	git("add", ".")
	git("commit", "--quiet", "--allow-empty", "-m", "head")
	return dir
}

func gitEnv() []string {
	return []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "HOME=" + os.TempDir()}
}

// TestDiffPR runs diff-pr.sh, the steps both CI files run, on two commits
// of a fixture repository, rendered with kustomize and with Helm 3 and 4:
// the comment names the one workload that reads the edited key, and only
// it; an edit of a key nobody reads gives a comment where nothing rolls.
func TestDiffPR(t *testing.T) {
	testtools.Tool(t, "confighash")
	script := filepath.Join(testtools.RepoRoot(t), "examples", "pipelines", "diff-pr.sh")
	renders := []struct{ tool, render, flags string }{
		{"kustomize", "kustomize build .", ""},
		{"helm3", "helm3 template web chart -n shop", "--namespace shop"},
		{"helm4", "helm4 template web chart -n shop", "--namespace shop"},
	}
	edits := []struct {
		name string
		edit func(string) string
		want []string
		not  []string
	}{
		{"a key web reads", func(s string) string { return strings.Replace(s, "LOG_LEVEL: info", "LOG_LEVEL: debug", 1) },
			[]string{"1 of 2 workloads rolls: 1 because ConfigMap shop/app key LOG\\_LEVEL changed", "`Deployment shop/web` | yes"},
			[]string{"Deployment shop/api", "debug"}},
		{"a key nobody reads", func(s string) string { return strings.Replace(s, `PORT: "8080"`, "PORT: \"8080\"\n  UNUSED: x", 1) },
			[]string{"0 of 2 workloads roll", "2 other workloads are unchanged"},
			[]string{"| yes |"}},
	}
	for _, e := range edits {
		repo := fixtureRepo(t, e.edit)
		for _, r := range renders {
			t.Run(e.name+"/"+r.tool, func(t *testing.T) {
				testtools.Tool(t, r.tool)
				env := append(gitEnv(), "RENDER="+r.render, "DIFF_FLAGS="+r.flags)
				out := filepath.Join(t.TempDir(), "comment.md")
				res := pipe(t, repo, envPrefix(env)+" bash "+script+" HEAD~1 HEAD "+out)
				require.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr)
				comment, err := os.ReadFile(out)
				require.NoError(t, err)
				for _, s := range e.want {
					assert.Contains(t, string(comment), s)
				}
				for _, s := range e.not {
					assert.NotContains(t, string(comment), s)
				}
				// The worktrees are gone again.
				wt := testtools.Run(t, repo, gitEnv(), nil, "git", "worktree", "list")
				assert.Equal(t, 1, strings.Count(strings.TrimSpace(wt.Stdout), "\n")+1, wt.Stdout)
			})
		}
	}
}

// TestDiffPRRenderFails: a render that fails fails the step, naming the
// side, and writes no comment.
func TestDiffPRRenderFails(t *testing.T) {
	testtools.Tool(t, "confighash")
	script := filepath.Join(testtools.RepoRoot(t), "examples", "pipelines", "diff-pr.sh")
	repo := fixtureRepo(t, func(s string) string { return s })
	out := filepath.Join(t.TempDir(), "comment.md")
	res := pipe(t, repo, envPrefix(append(gitEnv(), "RENDER=false"))+" bash "+script+" HEAD~1 HEAD "+out)
	assert.NotEqual(t, 0, res.ExitCode)
	assert.Contains(t, res.Stderr, "rendering base")
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err), "no comment is written")
}

// TestCIFilesCallTheScript: the GitHub workflow and the GitLab job run
// diff-pr.sh with the base and head commits, so the test above covers them.
func TestCIFilesCallTheScript(t *testing.T) {
	dir := filepath.Join(testtools.RepoRoot(t), "examples", "pipelines")
	for file, args := range map[string]string{
		"github/confighash-diff.yaml":          `diff-pr.sh "${{ github.event.pull_request.base.sha }}" "${{ github.event.pull_request.head.sha }}" confighash-diff.md`,
		"gitlab/confighash-diff.gitlab-ci.yml": `diff-pr.sh "$CI_MERGE_REQUEST_DIFF_BASE_SHA" "$CI_COMMIT_SHA" confighash-diff.md`,
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		assert.Contains(t, string(b), args, file)
		_, err = yaml.Parse(string(b))
		assert.NoError(t, err, "%s is YAML", file)
	}
}

// envPrefix writes assignments for a shell command line.
func envPrefix(env []string) string {
	var b strings.Builder
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString(k + "='" + strings.ReplaceAll(v, "'", `'\''`) + "' ")
	}
	return b.String()
}
