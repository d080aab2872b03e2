// Package helm3 renders a chart through the Helm 3 SDK with a post-renderer,
// the way `helm template` does.
package helm3

import (
	"fmt"
	"io"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/postrender"

	"github.com/confighash/confighash/examples/helm-sdk/manifests"
	"github.com/confighash/confighash/postrenderer"
)

// The confighash post-renderer is a Helm 3 post-renderer.
var _ postrender.PostRenderer = (*postrenderer.PostRenderer)(nil)

// Render renders the chart at chartPath, with its default values, as release
// name in namespace, runs pr over the manifests and writes them to w as `helm
// template` prints them. Nothing is written when rendering fails.
func Render(w io.Writer, chartPath, name, namespace string, pr postrender.PostRenderer) error {
	chart, err := loader.Load(chartPath)
	if err != nil {
		return fmt.Errorf("loading the chart %s: %w", chartPath, err)
	}

	// A client-only dry run, as helm template does: no cluster is contacted,
	// the release is kept in memory and never installed.
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true // skip the check that the release name is free
	install.Namespace = namespace
	install.ReleaseName = name
	install.PostRenderer = pr

	rel, err := install.Run(chart, map[string]any{})
	if err != nil {
		return fmt.Errorf("rendering the chart %s: %w", chartPath, err)
	}

	hooks := make([]manifests.Hook, 0, len(rel.Hooks))
	for _, h := range rel.Hooks {
		hooks = append(hooks, manifests.Hook{Path: h.Path, Manifest: h.Manifest})
	}
	return manifests.Write(w, rel.Manifest, hooks)
}
