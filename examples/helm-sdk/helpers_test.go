package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The example's tests find the real tools as the main module's tests do: a
// missing tool or corpus skips with a message on a developer's machine and
// fails when CONFIGHASH_REQUIRE_TOOLS is set (CI).

const (
	release   = "web"
	namespace = "shop"
	// mainModule starts the checkout's go.mod.
	mainModule = "module github.com/confighash/confighash\n"
)

// repoRoot returns the confighash checkout: the nearest directory above the
// working directory whose go.mod is the main module's, not this example's.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte(mainModule)) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of github.com/confighash/confighash above the working directory")
		}
		dir = parent
	}
}

// unavailable skips the test, or fails it under CONFIGHASH_REQUIRE_TOOLS.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CONFIGHASH_REQUIRE_TOOLS") != "" {
		t.Fatal(msg + " (CONFIGHASH_REQUIRE_TOOLS is set)")
	}
	t.Skip(msg)
}

// tool returns $CONFIGHASH_BIN/name, the checkout's bin/name when unset.
func tool(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("CONFIGHASH_BIN")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), "bin")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		unavailable(t, "%s is not installed: run `make build tools` in the checkout", p)
	}
	return p
}

// exampleChart returns the checkout's examples/helm.
func exampleChart(t testing.TB) string {
	return filepath.Join(repoRoot(t), "examples", "helm")
}

// promtail returns charts/promtail of $CONFIGHASH_CORPUS.
func promtail(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("CONFIGHASH_CORPUS")
	if dir == "" {
		unavailable(t, "CONFIGHASH_CORPUS is not set: point it at ../shared/corpus to render its promtail chart")
	}
	chart := filepath.Join(dir, "charts", "promtail")
	if _, err := os.Stat(chart); err != nil {
		t.Fatalf("CONFIGHASH_CORPUS=%s: %v", dir, err)
	}
	return chart
}

// helm is one real helm binary with homes of its own (Helm 3 cannot load a
// plugins directory that holds Helm 4 plugins) and bin/confighash as its
// post-renderer: the executable for Helm 3, for Helm 4 the plugin installed
// from postrenderer/plugin the way a user installs it.
type helm struct {
	major      int
	bin        string
	confighash string
	env        []string
}

func newHelm(t testing.TB, major int) helm {
	t.Helper()
	home := t.TempDir()
	h := helm{major: major, bin: tool(t, fmt.Sprintf("helm%d", major)), confighash: tool(t, "confighash")}
	h.env = []string{"CONFIGHASH_BIN=" + h.confighash, "CONFIGHASH_HMAC_KEY=", "CONFIGHASH_HMAC_KEY_FILE="}
	for _, v := range []string{"DATA", "CONFIG", "CACHE"} {
		h.env = append(h.env, "HELM_"+v+"_HOME="+filepath.Join(home, strings.ToLower(v)))
	}
	h.env = append(h.env, "HELM_PLUGINS="+filepath.Join(home, "data", "plugins"))
	if major == 4 {
		plugin := filepath.Join(repoRoot(t), "postrenderer", "plugin")
		if _, stderr, err := h.run(nil, "plugin", "install", plugin); err != nil {
			t.Fatalf("helm4 plugin install %s: %v\n%s", plugin, err, stderr)
		}
	}
	return h
}

// run runs helm with extra environment entries (later entries win).
func (h helm) run(env []string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(h.bin, args...)
	cmd.Env = append(append(os.Environ(), h.env...), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// template runs `helm template web CHART --namespace shop --post-renderer …
// --post-renderer-args=--namespace=shop`, with the key, when set, in
// CONFIGHASH_HMAC_KEY.
func (h helm) template(chart string, key []byte) (stdout, stderr string, err error) {
	pr := "confighash" // the Helm 4 plugin
	if h.major == 3 {
		pr = h.confighash
	}
	var env []string
	if len(key) > 0 {
		env = append(env, "CONFIGHASH_HMAC_KEY="+string(key))
	}
	return h.run(env, "template", release, chart, "--namespace", namespace,
		"--post-renderer", pr, "--post-renderer-args=--namespace="+namespace)
}

// documents splits a manifest stream at its "---" lines.
func documents(stream string) []string {
	var docs []string
	var cur strings.Builder
	for line := range strings.Lines(stream) {
		if strings.TrimRight(line, "\r\n") == "---" {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
	}
	return append(docs, cur.String())
}

// compare fails the test unless got (the SDK's output) is byte for byte
// want (helm template's), naming the first document that differs.
func compare(t testing.TB, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := documents(got), documents(want)
	for i := range max(len(g), len(w)) {
		var gd, wd string
		if i < len(g) {
			gd = g[i]
		}
		if i < len(w) {
			wd = w[i]
		}
		if gd != wd {
			t.Fatalf("document %d differs (the SDK printed %d documents, helm template %d)\n--- SDK:\n%s\n--- helm template:\n%s",
				i, len(g), len(w), gd, wd)
		}
	}
	t.Fatalf("the outputs differ between the documents\n--- SDK:\n%q\n--- helm template:\n%q", got, want)
}
