package examples_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// sweptModules are the chart repositories TestRealCharts takes rows from,
// and the folder that holds their charts; and single charts that projects
// ship beside their code (a folder holding a Chart.yaml is swept as one
// chart): cert-manager's trust-manager, node-feature-discovery (its
// master Deployment and worker DaemonSet read ConfigMaps of the chart), the
// Secrets Store CSI driver, Crossplane, Dapr (seven subcharts), Bitnami's
// sealed-secrets, kueue, and the Actions Runner Controller's two
// controllers.
var sweptModules = []chartIn{
	{promCharts, "charts"}, {grafanaCharts, "charts"}, {argoHelm, "charts"}, {dandyCharts, "charts"}, {kedaCharts, "."},
	{"github.com/cert-manager/trust-manager@v0.15.0", "deploy/charts/trust-manager"},
	{"sigs.k8s.io/node-feature-discovery@v0.17.0", "deployment/helm/node-feature-discovery"},
	{"sigs.k8s.io/secrets-store-csi-driver@v1.4.7", "charts/secrets-store-csi-driver"},
	{"github.com/crossplane/crossplane@v1.18.2", "cluster/charts/crossplane"},
	{"github.com/dapr/dapr@v1.14.4", "charts/dapr"},
	{"github.com/bitnami-labs/sealed-secrets@v0.40.0", "helm/sealed-secrets"},
	{kueueNext, "charts/kueue"},
	{"github.com/actions/actions-runner-controller@v0.27.6", "charts/actions-runner-controller"},
	{"github.com/actions/actions-runner-controller@v0.27.6", "charts/gha-runner-scale-set-controller"},
}

// sweptChart is what a chart of the sweep needs beyond its defaults.
type sweptChart struct {
	// args go to every render: the values a chart refuses to render
	// without.
	args []string
	// deps are subcharts from the swept modules, copied into the chart's
	// charts/ folder as helm dependency build would.
	deps []chartIn
	// dropDeps leaves the dependencies out of the copy's Chart.yaml: they
	// come from repositories the module proxy does not serve, each is off
	// by default, and Helm renders no chart whose listed subcharts are
	// missing, even switched off.
	dropDeps bool
	// differ are the workloads Helm 3 and Helm 4 hash differently, as
	// realChart.helmsDiffer.
	differ []string
	// refused is the error confighash gives the chart's defaults when it
	// refuses them (both Helms print it, nothing is rendered); the checks
	// then run with args.
	refused string
}

// sweptCharts holds the charts of sweptModules that need more than their
// defaults. Every other chart there renders with its defaults.
var sweptCharts = map[string]sweptChart{
	// The server's ConfigMap, and prometheus-adapter's, end their
	// template inside a literal block: Helm 4 stores the value without the
	// line feed Helm 3 keeps (docs/helm.md).
	"prometheus": {deps: []chartIn{
		{promCharts, "charts/alertmanager"}, {promCharts, "charts/kube-state-metrics"},
		{promCharts, "charts/prometheus-node-exporter"}, {promCharts, "charts/prometheus-pushgateway"},
	}, differ: []string{"Deployment/shop/web-prometheus-server"}},
	"prometheus-adapter": {differ: []string{"Deployment/shop/web-prometheus-adapter"}},
	// The agent's ConfigMap template ends in a line of spaces after its
	// literal block: Helm 3 trims it off the document, Helm 4 keeps it in
	// the value.
	"grafana-agent": {differ: []string{"DaemonSet//web-grafana-agent"}},
	// It renders nothing with its defaults (TestNothingRendered checks
	// that case); one Application, an object confighash passes through.
	"argocd-apps": {args: []string{
		"--set", "applications.guestbook.project=default", "--set", "applications.guestbook.destination.namespace=shop",
		"--set", "applications.guestbook.source.repoURL=https://github.com/argoproj/argocd-example-apps.git",
	}},
	"prometheus-kafka-exporter":    {dropDeps: true},
	"prometheus-postgres-exporter": {args: []string{"--set", "config.datasource.password=secret"}},
	"loki": {dropDeps: true, args: []string{
		"--set", "deploymentMode=SingleBinary", "--set", "singleBinary.replicas=1", "--set", "loki.storage.type=filesystem",
		"--set", "loki.useTestSchema=true", "--set", "loki.commonConfig.replication_factor=1",
		"--set", "read.replicas=0", "--set", "write.replicas=0", "--set", "backend.replicas=0",
	}},
	"tempo-distributed": {dropDeps: true, args: []string{"--set", "ingest.kafka.address=kafka:9092"}},
	"tempo-vulture":     {args: []string{"--set", "tempoAddress.push=http://tempo:4318", "--set", "tempoAddress.query=http://tempo:3200"}},
	// The chart writes api-token: {{ .Values.agent.apiToken | b64enc }},
	// which renders null when the token is unset (docs/helm.md says why
	// confighash refuses it).
	"synthetic-monitoring-agent": {
		refused: "Secret shop/web-synthetic-monitoring-agent (document 1, synthetic-monitoring-agent/templates/secret.yaml): data.api-token: expected a string, found null",
		args:    []string{"--set", "agent.apiToken=token"},
	},
}

// TestRealChartSweep renders every chart of the chart repositories that
// TestRealCharts takes its rows from, other than those rows, with its
// defaults (and the values in sweptCharts), through the real Helm 3 and
// Helm 4 with confighash, and holds each render to what checkRealRender
// holds a row to: only confighash's annotations added, verify passing, each
// hash and external list the one computed independently, the KRM function
// and both Helms agreeing. Which workloads get a hash is not written down
// per chart here; the independent computation decides it.
func TestRealChartSweep(t *testing.T) {
	t.Parallel()
	rows := map[chartIn]bool{}
	for _, r := range realCharts {
		rows[r.chart] = true
	}
	swept := map[string]bool{}
	for _, m := range sweptModules {
		dir := filepath.Join(testtools.ModuleDir(t, m.module), m.path)
		var names []string
		if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err == nil {
			names = []string{"."}
		} else {
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range entries {
				names = append(names, e.Name())
			}
		}
		for _, name := range names {
			in := chartIn{m.module, filepath.Join(m.path, name)}
			if _, err := os.Stat(filepath.Join(dir, name, "Chart.yaml")); err != nil || rows[in] {
				continue
			}
			name = filepath.Base(in.path)
			require.False(t, swept[name], "two charts of the sweep are named %s", name)
			swept[name] = true
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				checkSweptChart(t, in, sweptCharts[name])
			})
		}
	}
	for name := range sweptCharts {
		assert.True(t, swept[name], "sweptCharts names %s, which is no chart of the sweep", name)
	}
}

// checkSweptChart copies one chart of the sweep and checks its renders.
func checkSweptChart(t *testing.T, in chartIn, sc sweptChart) {
	t.Helper()
	chart := realChartCopy(t, realChart{chart: in, deps: sc.deps})
	if sc.dropDeps {
		dropDependencies(t, filepath.Join(chart, "Chart.yaml"))
	}
	h3, h4 := realHelm(t, 3), helmWithIdentity(t, 4)
	if sc.refused != "" {
		for _, h := range []testtools.Helm{h3, h4} {
			res := h.Run(t, nil, realTemplateArgs(t, h, chart, true)...)
			assert.NotZero(t, res.ExitCode, "%s: the defaults are refused", h)
			assert.Contains(t, res.Stderr, "confighash: error: "+sc.refused, h.String())
			assert.Empty(t, res.Stdout, "%s: nothing is printed", h)
		}
	}
	hashes3, hashes4, _, _ := checkRenders(t, h3, h4, chart, sc.differ, sc.args)
	t.Logf("%d workloads hashed by Helm 3, %d by Helm 4", len(hashes3), len(hashes4))
}

// dropDependencies writes a Chart.yaml without its dependencies.
func dropDependencies(t *testing.T, path string) {
	t.Helper()
	n, err := kyaml.ReadFile(path)
	require.NoError(t, err)
	require.NotNil(t, n.Field("dependencies"), "%s lists no dependencies", path)
	require.NoError(t, n.PipeE(kyaml.Clear("dependencies")))
	require.NoError(t, kyaml.WriteFile(n, path))
}
