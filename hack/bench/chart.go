package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// chartDir is the chart make bench renders: a Deployment consuming a
// ConfigMap and a Secret, to which chart adds the three CustomResourceDefinitions
// of the shared corpus's Argo CD install (1.84 MB), copied into a temporary
// copy of the chart at run time so that the repository holds none of them.
const chartDir = "hack/bench/testdata/crdchart"

// withCorpusCRDs copies chartDir into dir and writes the CRDs of the corpus's
// Argo CD install into its templates.
func withCorpusCRDs(corpus, dir string) (string, error) {
	install, err := os.ReadFile(filepath.Join(corpus, "argo-cd", "install.yaml"))
	if err != nil {
		return "", err
	}
	var crds [][]byte
	for _, doc := range bytes.Split(install, []byte("\n---\n")) {
		if bytes.Contains(doc, []byte("\nkind: CustomResourceDefinition\n")) {
			crds = append(crds, doc)
		}
	}
	if len(crds) == 0 {
		return "", fmt.Errorf("%s: no CustomResourceDefinition found", filepath.Join(corpus, "argo-cd", "install.yaml"))
	}
	chart := filepath.Join(dir, "crdchart")
	if err := os.CopyFS(chart, os.DirFS(chartDir)); err != nil {
		return "", err
	}
	body := append(bytes.Join(crds, []byte("\n---\n")), '\n')
	return chart, os.WriteFile(filepath.Join(chart, "templates", "crds.yaml"), body, 0o644)
}

// passThroughPlugin is a Helm 4 post-renderer plugin whose script is cat:
// the floor for the confighash plugin.
const passThroughPlugin = `apiVersion: v1
type: postrenderer/v1
name: passthrough
version: 0.1.0
runtime: subprocess
runtimeConfig:
  platformCommand:
    - command: ${HELM_PLUGIN_DIR}/passthrough.sh
`

// helmEnv returns the environment entries that give helm a data, config,
// cache and plugin home of its own under dir (as the tests' helm has), and
// the confighash binary its plugin runs.
func helmEnv(dir, confighash string) []string {
	return append(testtools.HelmHomes(dir), "CONFIGHASH_BIN="+confighash)
}

// chart measures helm template on the CRD chart without and with confighash
// as the post-renderer (Helm 3: the executable; Helm 4: the plugin from
// postrenderer/plugin against a pass-through plugin), n pairs alternated.
// tmp is a scratch directory of its own.
func chart(tmp, corpus, helm3, helm4, bin string, n int) error {
	chartPath, err := withCorpusCRDs(corpus, tmp)
	if err != nil {
		return err
	}
	fmt.Printf("chart render: helm template of %s (3 CRDs, 1.84 MB, and a Deployment, ConfigMap, Secret), %d pairs alternated, medians\n", chartDir, n)
	base := []string{"template", "web", chartPath, "--namespace", "web"}

	if helm3 != "" {
		env := helmEnv(filepath.Join(tmp, "helm3"), bin)
		plain := command{argv: append([]string{helm3}, base...), env: env}
		post := command{argv: append(append([]string{helm3}, base...), "--post-renderer", bin, "--post-renderer-args", "--namespace=web"), env: env}
		if err := chartPair("helm3 template", "helm3 template --post-renderer bin/confighash", plain, post, n); err != nil {
			return err
		}
		// Helm 3 itself does more work with any post-renderer (it writes the
		// manifest out and reads it back); a pass-through one shows how much.
		cat := filepath.Join(tmp, "cat.sh")
		if err := os.WriteFile(cat, []byte("#!/bin/sh\nexec cat\n"), 0o755); err != nil {
			return err
		}
		pass := command{argv: append(append([]string{helm3}, base...), "--post-renderer", cat), env: env}
		if err := chartPair("helm3 template", "helm3 template --post-renderer cat", plain, pass, n); err != nil {
			return err
		}
		if err := chartPair("helm3 template --post-renderer cat", "helm3 template --post-renderer bin/confighash", pass, post, n); err != nil {
			return err
		}
	}
	if helm4 != "" {
		env := helmEnv(filepath.Join(tmp, "helm4"), bin)
		plugin, err := filepath.Abs("postrenderer/plugin")
		if err != nil {
			return err
		}
		pass := filepath.Join(tmp, "passthrough")
		if err := os.MkdirAll(pass, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(pass, "plugin.yaml"), []byte(passThroughPlugin), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(pass, "passthrough.sh"), []byte("#!/bin/sh\ncat\n"), 0o755); err != nil {
			return err
		}
		for _, p := range []string{plugin, pass} {
			cmd := exec.Command(helm4, "plugin", "install", p)
			cmd.Env = append(os.Environ(), env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("helm4 plugin install %s: %w: %s", p, err, out)
			}
		}
		floor := command{argv: append(append([]string{helm4}, base...), "--post-renderer", "passthrough"), env: env}
		post := command{argv: append(append([]string{helm4}, base...), "--post-renderer", "confighash", "--post-renderer-args", "--namespace=web"), env: env}
		if err := chartPair("helm4 template, pass-through plugin (cat)", "helm4 template, confighash plugin", floor, post, n); err != nil {
			return err
		}
	}
	fmt.Println()
	return nil
}

func chartPair(aName, bName string, a, b command, n int) error {
	as, bs, err := pairs(a, b, n)
	if err != nil {
		return err
	}
	fmt.Printf("  %-48s wall %7.1f ms  CPU %7.1f ms\n", "floor: "+aName, ms(median(as, wall)), ms(median(as, cpu)))
	fmt.Printf("  %-48s wall %7.1f ms  CPU %7.1f ms\n", bName, ms(median(bs, wall)), ms(median(bs, cpu)))
	fmt.Printf("  %-48s wall %.3fx       CPU %.3fx   (target: wall <= 1.05x)\n", "  median of the paired ratios", medianRatio(as, bs, wall), medianRatio(as, bs, cpu))
	return nil
}
