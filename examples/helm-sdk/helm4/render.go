// Package helm4 renders a chart through the Helm 4 SDK with a post-renderer,
// the way `helm template` does.
package helm4

import (
	"fmt"
	"io"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/postrenderer"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/confighash/confighash/examples/helm-sdk/manifests"
	confighash "github.com/confighash/confighash/postrenderer"
)

// The confighash post-renderer is a Helm 4 post-renderer.
var _ postrenderer.PostRenderer = (*confighash.PostRenderer)(nil)

// Render renders the chart at chartPath, with its default values, as release
// name in namespace, runs pr over the manifests (hooks included: Helm 4's
// default post-render strategy is "combined") and writes them to w as `helm
// template` prints them. Nothing is written when rendering fails.
func Render(w io.Writer, chartPath, name, namespace string, pr postrenderer.PostRenderer) error {
	chart, err := loader.Load(chartPath)
	if err != nil {
		return fmt.Errorf("loading the chart %s: %w", chartPath, err)
	}

	// A client-only dry run, as helm template does: no cluster is contacted,
	// the release is kept in memory and never installed.
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.Replace = true // skip the check that the release name is free
	install.Namespace = namespace
	install.ReleaseName = name
	install.PostRenderer = pr

	result, err := install.Run(chart, map[string]any{})
	if err != nil {
		return fmt.Errorf("rendering the chart %s: %w", chartPath, err)
	}
	// Run returns a release.Releaser; a chart of apiVersion v1 or v2 gives a
	// *release.Release of pkg/release/v1.
	rel, ok := result.(*release.Release)
	if !ok {
		return fmt.Errorf("rendering the chart %s: a release of type %T", chartPath, result)
	}

	hooks := make([]manifests.Hook, 0, len(rel.Hooks))
	for _, h := range rel.Hooks {
		hooks = append(hooks, manifests.Hook{Path: h.Path, Manifest: h.Manifest})
	}
	return manifests.Write(w, rel.Manifest, hooks)
}
