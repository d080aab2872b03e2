package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// The example's tests find the real tools and the corpus through the main
// module's testtools: a missing tool or corpus skips with a message on a
// developer's machine and fails when CONFIGHASH_REQUIRE_TOOLS is set (CI).

const (
	release   = "web"
	namespace = "shop"
)

// exampleChart returns the checkout's examples/helm.
func exampleChart(t testing.TB) string {
	return filepath.Join(testtools.RepoRoot(t), "examples", "helm")
}

// promtail returns charts/promtail of $CONFIGHASH_CORPUS.
func promtail(t testing.TB) string {
	t.Helper()
	chart := filepath.Join(testtools.Corpus(t), "charts", "promtail")
	if _, err := os.Stat(chart); err != nil {
		t.Fatalf("CONFIGHASH_CORPUS: %v", err)
	}
	return chart
}

// helm is one real helm binary with homes of its own (Helm 3 cannot load a
// plugins directory that holds Helm 4 plugins) and bin/confighash as its
// post-renderer: the executable for Helm 3, for Helm 4 the plugin installed
// from postrenderer/plugin the way a user installs it.
type helm struct {
	testtools.Helm
	confighash string
}

func newHelm(t testing.TB, major int) helm {
	t.Helper()
	h := helm{Helm: testtools.NewHelm(t, major), confighash: testtools.Tool(t, "confighash")}
	h.Env = append(h.Env, "CONFIGHASH_BIN="+h.confighash, "CONFIGHASH_HMAC_KEY=", "CONFIGHASH_HMAC_KEY_FILE=")
	if major == 4 {
		h.InstallPlugin(t, filepath.Join(testtools.RepoRoot(t), "postrenderer", "plugin"))
	}
	return h
}

// template runs `helm template web CHART --namespace shop --post-renderer …
// --post-renderer-args=--namespace=shop`, with the key, when set, in
// CONFIGHASH_HMAC_KEY.
func (h helm) template(t testing.TB, chart string, key []byte) testtools.Result {
	t.Helper()
	pr := "confighash" // the Helm 4 plugin
	if h.Version == 3 {
		pr = h.confighash
	}
	var env []string
	if len(key) > 0 {
		env = append(env, "CONFIGHASH_HMAC_KEY="+string(key))
	}
	return h.Run(t, env, "template", release, chart, "--namespace", namespace,
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
