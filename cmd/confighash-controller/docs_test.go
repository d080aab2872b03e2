package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// helpFlag is a flag in the usage: "  -name type" or "  -name", its usage
// on the next line, ending "(default X)" when the default is not the zero
// value.
var (
	helpFlag    = regexp.MustCompile(`(?m)^  -([a-z0-9-]+)(?: \w+)?\n\s+(.*)$`)
	helpDefault = regexp.MustCompile(`\(default "?([^")]*)"?\)$`)
)

// docRow is a row of the flags table of docs/controller.md: flags, default.
var docRow = regexp.MustCompile("(?m)^\\| (`--[^|]*) \\| ([^|]*) \\|")

// TestHelpMatchesDocs runs the built command with -h and compares its flags
// with the table of docs/controller.md (Flags): every flag it has is
// documented, every documented flag exists, and where the table gives plain
// values for the defaults, one per flag of the row, they are the defaults
// -h prints.
func TestHelpMatchesDocs(t *testing.T) {
	defaults := helpDefaults(t, buildCommand(t))
	documented := map[string]bool{}
	for _, row := range docRows(t) {
		names := docFlags(row[1])
		for _, name := range names {
			documented[name] = true
			assert.Contains(t, defaults, name, "docs/controller.md documents --%s, which -h does not list", name)
		}
		values := strings.Split(row[2], ", ")
		if len(values) != len(names) {
			continue
		}
		for i, v := range values {
			v = strings.Trim(strings.TrimSpace(v), "`")
			if strings.ContainsAny(v, "$ (") || slices.Contains([]string{"off", "all", "in-cluster"}, v) {
				continue // described, not a value
			}
			got := defaults[names[i]]
			if got == "" && v == "false" {
				got = "false" // -h prints no default for a false bool
			}
			assert.Equal(t, v, got, "default of --%s: docs/controller.md against -h", names[i])
		}
	}
	for name := range defaults {
		assert.True(t, documented[name], "-h lists -%s, which docs/controller.md's table of flags does not", name)
	}
}

// buildCommand builds the command into a temporary directory.
func buildCommand(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "confighash-controller")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// helpDefaults runs bin -h and returns each flag it lists with the default
// its usage gives ("" for none).
func helpDefaults(t *testing.T, bin string) map[string]string {
	t.Helper()
	var help bytes.Buffer
	cmd := exec.Command(bin, "-h")
	cmd.Stdout = &help
	require.NoError(t, cmd.Run())
	defaults := map[string]string{}
	for _, m := range helpFlag.FindAllStringSubmatch(help.String(), -1) {
		def := ""
		if d := helpDefault.FindStringSubmatch(m[2]); d != nil {
			def = d[1]
		}
		defaults[m[1]] = def
	}
	require.Contains(t, defaults, "coalesce-window", "the usage lists the flags:\n%s", help.String())
	return defaults
}

// docRows returns the rows of the flags table of docs/controller.md, each
// as docRow matches it: the row, its flags cell, its default cell.
func docRows(t *testing.T) [][]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "controller.md"))
	require.NoError(t, err)
	rows := docRow.FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, rows, "docs/controller.md has a table of flags")
	return rows
}

// TestKubeconfigAsDocumented: the sources that docs/controller.md's table
// of flags gives as --kubeconfig's default, in its order, are the ones -h
// names and the ones the built command reads. For each source the table
// lists, a kubeconfig is put in it and in every source listed after it,
// each naming a server of its own that refuses connections: the command
// fails naming the server of that source, and --kubeconfig wins over all.
// (The in-cluster configuration needs a pod's service account token; the
// test only checks that the table lists it last.)
func TestKubeconfigAsDocumented(t *testing.T) {
	bin := buildCommand(t)
	var cell string
	for _, row := range docRows(t) {
		if slices.Equal(docFlags(row[1]), []string{"kubeconfig"}) {
			cell = strings.ReplaceAll(strings.TrimSpace(row[2]), "`", "")
		}
	}
	require.NotEmpty(t, cell, "docs/controller.md documents --kubeconfig's default")
	assert.Equal(t, cell, helpDefaults(t, bin)["kubeconfig"], "--kubeconfig's default: docs/controller.md against -h")
	sources := strings.Split(cell, ", then ")
	require.Equal(t, "in-cluster", sources[len(sources)-1], "docs/controller.md: --kubeconfig's default ends with the in-cluster configuration")
	sources = sources[:len(sources)-1]

	// server is a server address in the kubeconfig of one source.
	server := func(port int) string { return fmt.Sprintf("https://127.0.0.1:%d", port) }
	dir := t.TempDir()
	kubeconfig := func(path string, port int) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
		cfg := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q}}]\n"+
			"users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", server(port))
		require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	}
	run := func(t *testing.T, env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--metrics-bind-address=0", "--health-probe-bind-address=0")...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.Error(t, cmd.Run(), "no API server answers, so the command fails")
		return stderr.String()
	}
	var base []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains([]string{"KUBECONFIG", "HOME", "KUBERNETES_SERVICE_HOST"}, name) {
			base = append(base, kv)
		}
	}
	// put returns the environment that gives a kubeconfig in source.
	put := func(source string, port int) []string {
		t.Helper()
		path := filepath.Join(dir, fmt.Sprint(port))
		switch source {
		case "$KUBECONFIG":
			kubeconfig(filepath.Join(path, "kubeconfig"), port)
			return []string{"KUBECONFIG=" + filepath.Join(path, "kubeconfig")}
		case "~/.kube/config":
			kubeconfig(filepath.Join(path, ".kube", "config"), port)
			return []string{"HOME=" + path}
		}
		require.Failf(t, "unknown source", "docs/controller.md names %q as a source of --kubeconfig's default", source)
		return nil
	}
	empty := "HOME=" + filepath.Join(dir, "empty-home")
	for i := range sources {
		env := slices.Concat(base, []string{empty})
		for j, source := range sources[i:] {
			env = append(env, put(source, 10+i*10+j)...) // a later HOME wins
		}
		t.Run(sources[i], func(t *testing.T) {
			assert.Contains(t, run(t, env), server(10+i*10)+"/", "the command reads %s first of %q", sources[i], sources[i:])
		})
		if i == 0 {
			flagged := filepath.Join(dir, "flag", "kubeconfig")
			kubeconfig(flagged, 9)
			t.Run("--kubeconfig", func(t *testing.T) {
				assert.Contains(t, run(t, env, "--kubeconfig", flagged), server(9)+"/", "--kubeconfig wins over %q", sources)
			})
		}
	}
	for n, source := range []string{"$KUBECONFIG", "~/.kube/config"} {
		if slices.Contains(sources, source) {
			continue
		}
		env := slices.Concat(base, []string{empty}, put(source, 90+n))
		t.Run("not "+source, func(t *testing.T) {
			assert.NotContains(t, run(t, env), server(90+n)+"/", "the command reads %s, which docs/controller.md does not list", source)
		})
	}
}

// docFlags reads the flags of a table cell: "`--a`, `--b`", where "`-c`"
// after "`--x-y`" abbreviates "--x-c".
func docFlags(cell string) []string {
	var names []string
	for _, f := range strings.Split(cell, ",") {
		f = strings.Trim(strings.TrimSpace(f), "`")
		switch {
		case strings.HasPrefix(f, "--"):
			names = append(names, strings.TrimPrefix(f, "--"))
		case strings.HasPrefix(f, "-") && len(names) > 0:
			first := names[0]
			cut := strings.LastIndex(first, "-")
			for cut > 0 && strings.Count(first[cut:], "-") < strings.Count(f, "-") {
				cut = strings.LastIndex(first[:cut], "-")
			}
			names = append(names, first[:cut]+f)
		}
	}
	return names
}
