package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/output"
	"github.com/confighash/confighash/internal/rolldiff"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// diffInputs writes the old and new renders to files and returns their
// paths.
func diffInputs(t *testing.T, old, cur string) (string, string) {
	dir := t.TempDir()
	o, n := filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml")
	require.NoError(t, os.WriteFile(o, []byte(old), 0o600))
	require.NoError(t, os.WriteFile(n, []byte(cur), 0o600))
	return o, n
}

func TestDiffCommand(t *testing.T) {
	old := configMap + "---\n" + deployment
	edited := strings.Replace(old, "k: v", "k: w", 1)
	unread := strings.Replace(deployment, "envFrom:\n        - configMapRef:", "env:\n        - name: K\n          valueFrom:\n            configMapKeyRef:\n              key: k", 1)
	unread = strings.Replace(unread, "            name: cfg", "              name: cfg", 1)
	oldKeyed := configMap + "  other: x\n---\n" + unread
	tests := []struct {
		name     string
		old, new string
		args     []string
		stdin    string
		code     int
		stdout   []string
		stderr   string
	}{
		{name: "changes, plain", old: old, new: edited, code: 0,
			stdout: []string{"1 of 1 workload rolls: 1 because ConfigMap cfg key k changed", "Deployment web", "yes"}},
		{name: "changes, --exit-code", old: old, new: edited, args: []string{"--exit-code"}, code: 1},
		{name: "flags after the files", old: old, new: edited, args: []string{"--exit-code", "--namespace", "shop"}, code: 1,
			stdout: []string{"ConfigMap shop/cfg key k changed"}},
		{name: "a key nobody reads, --exit-code", old: oldKeyed, new: strings.Replace(oldKeyed, "other: x", "other: z", 1),
			args: []string{"--exit-code"}, code: 0, stdout: []string{"0 of 1 workload roll"}},
		{name: "no change, --exit-code", old: old, new: old, args: []string{"--exit-code"}, code: 0, stdout: []string{"0 of 1 workload roll"}},
		{name: "markdown", old: old, new: edited, args: []string{"--markdown"}, code: 0,
			stdout: []string{"### confighash diff", "| `Deployment web` | yes | ConfigMap cfg key k changed |"}},
		{name: "stdin for NEW", old: old, new: "-", stdin: edited, args: []string{"--exit-code"}, code: 1},
		{name: "bad input names the file", old: old, new: "-", stdin: "a: [", code: 1, stderr: "-: reading the render"},
		{name: "bad input with --exit-code exits 2", old: old, new: "-", stdin: "a: [", args: []string{"--exit-code"}, code: 2, stderr: "reading the render"},
		{name: "an empty NEW: a warning, and every workload removed", old: old, new: "-", stdin: "", args: []string{"--exit-code"}, code: 1,
			stdout: []string{"Deployment web  removed  removed workload"}, stderr: "warning: standard input holds no objects, so every workload of "},
		{name: "an empty OLD: no warning", old: "# nothing yet\n", new: old, code: 0, stdout: []string{"Deployment web  new    new workload"}},
		{name: "one file", old: old, new: "", code: 1, stderr: "diff takes two renders"},
		{name: "--json and --markdown", old: old, new: edited, args: []string{"--json", "--markdown"}, code: 1, stderr: "exclude each other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, n := diffInputs(t, tc.old, tc.new)
			args := []string{"diff", o}
			switch tc.new {
			case "-":
				args = append(args, "-")
			case "":
			default:
				args = append(args, n)
			}
			code, stdout, stderr := run(t, tc.stdin, append(args, tc.args...)...)
			assert.Equal(t, tc.code, code, "stderr: %s", stderr)
			for _, s := range tc.stdout {
				assert.Contains(t, stdout, s)
			}
			if tc.stderr != "" {
				assert.Contains(t, stderr, tc.stderr)
				if len(tc.stdout) == 0 { // an error: nothing on stdout
					assert.Empty(t, stdout)
				}
			} else {
				assert.Empty(t, stderr)
			}
		})
	}
}

// TestDiffJSON: --json is the documented schema.
func TestDiffJSON(t *testing.T) {
	old := configMap + "---\n" + deployment
	o, n := diffInputs(t, old, strings.Replace(old, "k: v", "k: w", 1))
	code, stdout, stderr := run(t, "", "diff", "--json", o, n)
	require.Equal(t, 0, code, stderr)
	var res rolldiff.Result
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&res))
	require.Len(t, res.Workloads, 1)
	w := res.Workloads[0]
	assert.Equal(t, rolldiff.StatusRolls, w.Status)
	assert.Equal(t, []rolldiff.ConfigChange{{Ref: output.Ref{Kind: "ConfigMap", Name: "cfg"}, Change: rolldiff.ChangeKeys, Changed: []string{"k"}}}, w.Configs)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &raw))
	for _, field := range []string{"summary", "total", "rolling", "new", "removed", "workloads"} {
		assert.Contains(t, raw, field)
	}
}

// TestDiffCorpusExitCode: on the shared corpus, through the command line,
// an edit of a key nobody reads exits 0 with --exit-code, and an edit of a
// key Argo CD's server reads exits 1 and names it.
func TestDiffCorpusExitCode(t *testing.T) {
	install, err := os.ReadFile(filepath.Join(testtools.Corpus(t), "argo-cd", "install.yaml"))
	require.NoError(t, err)
	const cm = "kind: ConfigMap\nmetadata:\n  labels:\n    app.kubernetes.io/name: argocd-cmd-params-cm\n    app.kubernetes.io/part-of: argocd\n  name: argocd-cmd-params-cm\n"
	require.Contains(t, string(install), cm)
	for _, tc := range []struct {
		key  string
		code int
		want string
	}{
		{key: "nobody.reads.this", code: 0, want: "0 of "},
		{key: "server.insecure", code: 1, want: "Deployment argocd-server"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			edited := strings.Replace(string(install), cm, cm+"data:\n  "+tc.key+": \"true\"\n", 1)
			o, n := diffInputs(t, string(install), edited)
			code, stdout, stderr := run(t, "", "diff", "--exit-code", o, n)
			assert.Equal(t, tc.code, code, stderr)
			assert.Contains(t, stdout, tc.want)
			if tc.code == 1 {
				assert.Contains(t, stdout, "ConfigMap argocd-cmd-params-cm key "+tc.key+" added")
			}
		})
	}
}

// TestDiffUncheckedKinds: a render hashed with a functionConfig that lists
// another kind (a CloneSet) carries hashes diff reads only when told the
// kind with --workload; without it, diff fails naming the object and the
// flag instead of leaving the workload out of "0 of N roll".
func TestDiffUncheckedKinds(t *testing.T) {
	const cloneSet = "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata:\n  name: cs\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: c:1\n        envFrom:\n        - configMapRef:\n            name: cfg\n"
	workload := "--workload=CloneSet.apps.kruise.io=spec/template"
	render := func(in string) string {
		code, out, stderr := run(t, in, workload)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, "confighash.dev/hash")
		return out
	}
	old := configMap + "---\n" + cloneSet
	o, n := diffInputs(t, render(old), render(strings.Replace(old, "k: v", "k: w", 1)))

	code, stdout, stderr := run(t, "", "diff", "--exit-code", o, n)
	assert.Equal(t, 2, code, stdout)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "CloneSet cs: confighash.dev/hash at spec.template.metadata.annotations")
	assert.Contains(t, stderr, "--workload Kind.group=path")

	code, stdout, stderr = run(t, "", "diff", "--exit-code", workload, o, n)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stdout, "1 of 1 workload rolls: 1 because ConfigMap cfg key k changed")
}
