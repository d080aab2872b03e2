package chart_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/confighash/confighash/internal/controllercmd"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// documents lists the Kind/namespace/name of every document of a rendered
// stream, in order, repeats included (objects keeps one per key).
func documents(t *testing.T, stream string) []string {
	t.Helper()
	var out []string
	for _, u := range decoded(t, stream) {
		out = append(out, key(u))
	}
	return out
}

// TestChartWatchNamespacesForms renders the chart with watchNamespaces
// written the ways a team sets it: a list in a values file or --set
// 'watchNamespaces={shop,billing}', and a plain string on the command line,
// --set watchNamespaces=shop, as the controller's own --namespaces=shop,billing
// takes it. Each must give one Role and RoleBinding per namespace, once
// each (a repeated namespace gave two identical Roles), and the controller
// the same --namespaces. A string gave helm's "range can't iterate over shop".
func TestChartWatchNamespacesForms(t *testing.T) {
	valuesFile := func(t *testing.T, body string) []string {
		f := filepath.Join(t.TempDir(), "values.yaml")
		require.NoError(t, os.WriteFile(f, []byte(body), 0o600))
		return []string{"--values", f}
	}
	helms(t, func(t *testing.T, h testtools.Helm) {
		for _, tc := range []struct {
			name   string
			values func(t *testing.T) []string
			want   []string
		}{
			{"list in a values file", func(t *testing.T) []string { return valuesFile(t, "watchNamespaces: [shop, billing]\n") },
				[]string{"shop", "billing"}},
			{"list with --set", func(*testing.T) []string { return []string{"--set", "watchNamespaces={shop,billing}"} },
				[]string{"shop", "billing"}},
			{"one name with --set", func(*testing.T) []string { return []string{"--set", "watchNamespaces=shop"} },
				[]string{"shop"}},
			{"comma-separated string with --set", func(*testing.T) []string { return []string{"--set", `watchNamespaces=shop\,billing`} },
				[]string{"shop", "billing"}},
			{"string with spaces in a values file", func(t *testing.T) []string {
				return valuesFile(t, "watchNamespaces: \"shop, billing\"\n")
			}, []string{"shop", "billing"}},
			{"repeated name", func(*testing.T) []string { return []string{"--set", "watchNamespaces={shop,billing,shop}"} },
				[]string{"shop", "billing"}},
			{"empty string: every namespace", func(*testing.T) []string { return []string{"--set", "watchNamespaces="} }, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				stream := h.MustRun(t, append([]string{"template", "ch", chartDir(t), "--namespace", "ops"}, tc.values(t)...)...)
				docs := documents(t, stream)
				var want []string
				for _, ns := range tc.want {
					want = append(want, "Role/"+ns+"/ch-confighash-controller", "RoleBinding/"+ns+"/ch-confighash-controller")
				}
				if tc.want == nil {
					want = []string{"ClusterRole//ch-confighash-controller", "ClusterRoleBinding//ch-confighash-controller"}
				}
				var rbac []string
				for _, d := range docs {
					if strings.HasPrefix(d, "Role") || strings.HasPrefix(d, "ClusterRole") {
						rbac = append(rbac, d)
					}
				}
				slices.Sort(want)
				slices.Sort(rbac)
				assert.Equal(t, want, rbac, "the RBAC objects, each once")

				objs := objects(t, stream)
				d := typed[struct {
					Spec struct {
						Template struct {
							Spec struct {
								Containers []struct {
									Args []string `json:"args"`
								} `json:"containers"`
							} `json:"spec"`
						} `json:"template"`
					} `json:"spec"`
				}](t, objs["Deployment/ops/ch-confighash-controller"])
				opts, err := controllercmd.ParseFlags(d.Spec.Template.Spec.Containers[0].Args, io.Discard, os.Getenv)
				require.NoError(t, err)
				assert.Equal(t, tc.want, opts.Namespaces, "the controller's --namespaces")
			})
		}
	})
}

// TestChartLeaderElectionForms renders leaderElection.enabled as a bool and
// as the string a values file with quotes, helm's --set-string or a Flux
// valuesFrom targetPath, quoted, gives: "true" and "false" mean what the bools mean
// (they failed with "must be true, false or empty, not true"), empty and
// "auto" follow replicaCount, and anything else fails naming the value.
// Leader election on: the --leader-elect flag and the Role for its Lease.
func TestChartLeaderElectionForms(t *testing.T) {
	helms(t, func(t *testing.T, h testtools.Helm) {
		for _, tc := range []struct {
			set      []string
			want     bool
			wantFail string
		}{
			{set: []string{"--set", "leaderElection.enabled=true"}, want: true},
			{set: []string{"--set", "leaderElection.enabled=false", "--set", "replicaCount=2"}, want: false},
			{set: []string{"--set-string", "leaderElection.enabled=true"}, want: true},
			{set: []string{"--set-string", "leaderElection.enabled=false", "--set", "replicaCount=2"}, want: false},
			{set: []string{"--set-string", "leaderElection.enabled=True"}, want: true},
			{set: []string{"--set-string", "leaderElection.enabled=", "--set", "replicaCount=2"}, want: true},
			{set: []string{"--set-string", "leaderElection.enabled=auto"}, want: false},
			{set: []string{"--set-string", "leaderElection.enabled=yes"}, wantFail: `not "yes"`},
		} {
			t.Run(strings.Join(tc.set, " "), func(t *testing.T) {
				res := h.Run(t, nil, append([]string{"template", "ch", chartDir(t), "--namespace", "ops"}, tc.set...)...)
				if tc.wantFail != "" {
					assert.NotEqual(t, 0, res.ExitCode)
					assert.Contains(t, res.Stderr, tc.wantFail)
					return
				}
				require.Equal(t, 0, res.ExitCode, res.Stderr)
				docs := documents(t, res.Stdout)
				assert.Equal(t, tc.want, slices.Contains(docs, "Role/ops/ch-confighash-controller-leader-election"), "the leader-election Role")
				assert.Equal(t, tc.want, strings.Contains(res.Stdout, "- --leader-elect\n"), "the --leader-elect flag")
			})
		}
	})
}

// TestChartBoolStrings renders each on/off value of the chart as a bool and
// as the string "true" or "false" that a quoted value, --set-string or a
// Flux valuesFrom targetPath, quoted, gives. A template's `if` takes any non-empty
// string for true: dryRun "false" turned the controller's --dry-run on (it
// then never rolls anything), serviceMonitor.enabled "false" rendered a
// ServiceMonitor (which fails without its CRD). Each must be on exactly when
// the value means true; a value that is neither fails naming its key.
func TestChartBoolStrings(t *testing.T) {
	rows := []struct {
		key   string
		extra []string
		on    func(docs []string, stream string) bool
	}{
		{"dryRun", nil, func(_ []string, stream string) bool { return strings.Contains(stream, "- --dry-run\n") }},
		{"rbac.create", nil, func(docs []string, _ string) bool {
			return slices.Contains(docs, "ClusterRole//ch-confighash-controller")
		}},
		{"serviceAccount.create", []string{"--set", "serviceAccount.name=ch-confighash-controller"}, func(docs []string, _ string) bool {
			return slices.Contains(docs, "ServiceAccount/ops/ch-confighash-controller")
		}},
		{"metrics.service.enabled", nil, func(docs []string, _ string) bool {
			return slices.Contains(docs, "Service/ops/ch-confighash-controller-metrics")
		}},
		{"serviceMonitor.enabled", nil, func(docs []string, _ string) bool {
			return slices.Contains(docs, "ServiceMonitor/ops/ch-confighash-controller")
		}},
	}
	helms(t, func(t *testing.T, h testtools.Helm) {
		for _, row := range rows {
			for _, form := range []struct {
				flag, value string
				want        bool
			}{{"--set", "true", true}, {"--set", "false", false}, {"--set-string", "true", true}, {"--set-string", "false", false}, {"--set-string", "False", false}} {
				t.Run(row.key+" "+form.flag+" "+form.value, func(t *testing.T) {
					args := append([]string{"template", "ch", chartDir(t), "--namespace", "ops", form.flag, row.key + "=" + form.value}, row.extra...)
					res := h.Run(t, nil, args...)
					require.Equal(t, 0, res.ExitCode, res.Stderr)
					assert.Equal(t, form.want, row.on(documents(t, res.Stdout), res.Stdout))
				})
			}
			t.Run(row.key+" neither", func(t *testing.T) {
				res := h.Run(t, nil, append([]string{"template", "ch", chartDir(t), "--namespace", "ops", "--set-string", row.key + "=no"}, row.extra...)...)
				assert.NotEqual(t, 0, res.ExitCode)
				assert.Contains(t, res.Stderr, row.key)
			})
		}
	})
}

// TestChartLongReleaseName installs the chart into the API server under the
// longest release name helm accepts (53 characters), with every object the
// chart can make but the ServiceMonitor (its CRD is not served here): each
// name must be one the API server takes. The metrics Service was named the
// full name (up to 63 characters) plus "-metrics", past the 63 a Service
// name may have, and the install failed.
func TestChartLongReleaseName(t *testing.T) {
	cp := cptest.Shared(t)
	helms(t, func(t *testing.T, h testtools.Helm) {
		release := fmt.Sprintf("platform-team-h%d-", h.Version) + strings.Repeat("x", 53-len("platform-team-h3-"))
		require.Len(t, release, 53)
		ns := fmt.Sprintf("long-h%d", h.Version)
		res := h.Run(t, nil, "install", release, chartDir(t), "--namespace", ns, "--create-namespace", "--kubeconfig", cp.KubeconfigPath(),
			"--set", "metrics.service.enabled=true", "--set", "replicaCount=2", "--set", "watchNamespaces={"+ns+"}")
		require.Equal(t, 0, res.ExitCode, res.Stderr)
		cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
		svcs, err := cs.CoreV1().Services(ns).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, svcs.Items, 1, "the metrics Service")
		assert.True(t, strings.HasSuffix(svcs.Items[0].Name, "-metrics"), svcs.Items[0].Name)
	})
}
