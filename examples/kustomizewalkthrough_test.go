package examples_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// walkthroughTag is the comment kustomize's examples put before each shell
// block that its own integration run executes (mdrip): `@test` at v2,
// `@testAgainstLatestRelease` at v3.
var walkthroughTag = regexp.MustCompile(`^<!-- @\w+ .*@test\w* -->$`)

// walkthroughCurl stands in for curl in the walkthroughs: they download the
// example files from kustomize's repository on GitHub, which this machine
// does not reach, with curl's {a,b} URL lists and its #1 output names. It
// copies them from the same module version instead ($KUSTOMIZE_REPO), and
// fails on any other address.
const walkthroughCurl = `#!/bin/bash
out= url=
while [ $# -gt 0 ]; do
  case $1 in
    -o) out=$2; shift ;;
    -*) ;;
    *) url=$1 ;;
  esac
  shift
done
prefix=https://raw.githubusercontent.com/kubernetes-sigs/kustomize/master/
case $url in
  "$prefix"*) ;;
  *) echo "curl: no network here: $url" >&2; exit 1 ;;
esac
rel=${url#"$prefix"}
list=${rel#*\{}
list=${list%\}*}
[ "$list" = "$rel" ] && list=$(basename "$rel") rel=$(dirname "$rel")/{x}
dir=$(dirname "${rel%%\{*}x")
ext=${rel##*\}}
IFS=, read -ra names <<< "$list"
for n in "${names[@]}"; do
  cp "$KUSTOMIZE_REPO/$dir/$n$ext" "${out//#1/$n}" || exit 1
done
`

// TestKustomizeWalkthroughs runs the walkthroughs of kustomize's own
// examples (examples/*.md and examples/*/README.md of
// kustomizeExampleModules: configGeneration, combineConfigs,
// generatorOptions, breakfast, inlinePatch, helloWorld, ldap, springboot,
// wordpress, ...) the way kustomize's integration run does, block by block
// in one shell with the real kustomize on PATH, and then holds every
// kustomization they leave behind to what TestRealTreeSweep holds a tree
// to. The walkthroughs write their overlays, generators and patches with
// heredocs and `kustomize edit`, and edit configs as they go; what is
// checked is each tree as the walkthrough leaves it. The checks the
// walkthroughs make of kustomize's own output were written for kustomize
// v2 and v3, so their result is logged, not asserted.
func TestKustomizeWalkthroughs(t *testing.T) {
	t.Parallel()
	kustomize := testtools.Tool(t, "kustomize")
	testtools.Tool(t, "confighash")
	bash := testtools.OnPath(t, "bash") // the walkthroughs are bash scripts
	var tally treeTally
	t.Cleanup(func() { tally.report(t, "kustomize's walkthroughs") })
	for _, module := range kustomizeExampleModules {
		repo := testtools.ModuleDir(t, module)
		var docs []string
		require.NoError(t, filepath.WalkDir(filepath.Join(repo, "examples"), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "zh" {
				return fs.SkipDir // translations of the same walkthroughs
			}
			if err == nil && strings.HasSuffix(path, ".md") {
				docs = append(docs, path)
			}
			return err
		}))
		for _, doc := range docs {
			script := walkthroughScript(t, doc)
			if script == "" {
				continue
			}
			rel, err := filepath.Rel(repo, doc)
			require.NoError(t, err)
			t.Run(module+"/"+rel, func(t *testing.T) {
				t.Parallel()
				tmp, shims := t.TempDir(), t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(shims, "curl"), []byte(walkthroughCurl), 0o755))
				require.NoError(t, os.Symlink(kustomize, filepath.Join(shims, "kustomize")))
				// DEMO_HOME is set for the walkthroughs that assign it in
				// a block kustomize's run does not execute.
				demo := filepath.Join(tmp, "demo")
				require.NoError(t, os.Mkdir(demo, 0o755))
				env := []string{"TMPDIR=" + tmp, "DEMO_HOME=" + demo, "KUSTOMIZE_REPO=" + repo, "PATH=" + shims + ":/usr/bin:/bin", "HOME=" + tmp}
				res := testtools.Run(t, tmp, env, []byte(script), bash)
				t.Logf("the walkthrough's own script exited %d", res.ExitCode)
				var dirs []string
				require.NoError(t, filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
					if err == nil && d.Type().IsRegular() && slices.Contains(kustomizationNames, d.Name()) {
						dirs = append(dirs, filepath.Dir(path))
					}
					return err
				}))
				if len(dirs) == 0 {
					// The v2 README installs kustomize with go get; the
					// validation transformer's downloads kubeval.
					first, _, _ := strings.Cut(strings.TrimSpace(res.Stderr), "\n")
					t.Logf("the walkthrough wrote no kustomization: %s", first)
					return
				}
				for _, dir := range slices.Compact(dirs) {
					name, err := filepath.Rel(tmp, dir)
					require.NoError(t, err)
					t.Run(name, func(t *testing.T) {
						tally.check(t, dir, treeQuirk{})
					})
				}
			})
		}
	}
}

// walkthroughScript is the shell blocks of one walkthrough that
// kustomize's integration run executes, in order, or "" when it has none.
func walkthroughScript(t *testing.T, doc string) string {
	t.Helper()
	b, err := os.ReadFile(doc)
	require.NoError(t, err)
	var script strings.Builder
	tagged, inBlock := false, false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case inBlock && strings.HasPrefix(line, "```"):
			inBlock, tagged = false, false
			script.WriteString("\n")
		case inBlock:
			script.WriteString(line + "\n")
		case tagged && strings.HasPrefix(line, "```"):
			inBlock = true
		default:
			tagged = walkthroughTag.MatchString(strings.TrimSpace(line))
		}
	}
	return script.String()
}
