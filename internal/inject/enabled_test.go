package inject_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/inject"
)

// TestEnabledAnnotationReadAsKubectlSendsIt: confighash.dev/enabled is read
// as every YAML reader reads it. An unquoted false, no or off is a boolean
// that kubectl and Helm send as such, and the API server refuses the
// workload: an error naming it, not an opt-out or an opt-in.
func TestEnabledAnnotationReadAsKubectlSendsIt(t *testing.T) {
	tests := []struct{ value, err string }{
		{`"false"`, ""},
		{`'true'`, ""},
		{"false", `Deployment web (document 0): annotation confighash.dev/enabled: expected a string, found a boolean (quote it); kubectl and Helm send it so and the API server refuses the object`},
		{"no", `Deployment web (document 0): annotation confighash.dev/enabled: expected a string, found a boolean (quote it)`},
		{"Off", `Deployment web (document 0): annotation confighash.dev/enabled: expected a string, found a boolean (quote it)`},
		{"0", `Deployment web (document 0): annotation confighash.dev/enabled: expected a string, found a number (quote it)`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			n, err := yaml.Parse("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  annotations:\n    confighash.dev/enabled: " + tt.value +
				"\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n")
			require.NoError(t, err)
			r, err := inject.Analyze([]*yaml.RNode{n}, inject.Options{})
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, r.Workloads, 1)
			assert.Equal(t, tt.value == `"false"`, r.Workloads[0].OptedOut)
		})
	}
}

// TestOptedOutCarriesNoAnnotations: a workload that opts out carries none
// of the annotations confighash writes once the filter ran, under the
// prefix it was given, even when an earlier run (a kustomize base, a first
// render stage) wrote them: a hash left there would still roll the pods when
// the configs of that run change. The rest of the object stays as written; a
// stale hash on a Job's pod template too, which the API server refuses to
// change.
func TestOptedOutCarriesNoAnnotations(t *testing.T) {
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    %[1]s/enabled: "false"
    %[1]s/external: Secret/vault-db
    owner: me
spec:
  template:
    metadata:
      labels: {app: web}
      annotations:
        %[1]s/hash: v1-sha256:1111111111111111111111111111111111111111111111111111111111111111
        %[1]s/key-id: k1
    spec:
      containers:
      - name: web
        envFrom:
        - configMapRef: {name: cfg}
`
	const job = `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    confighash.dev/enabled: "false"
    confighash.dev/hash: v1-sha256:1111111111111111111111111111111111111111111111111111111111111111
spec:
  template:
    metadata:
      annotations:
        confighash.dev/hash: v1-sha256:2222222222222222222222222222222222222222222222222222222222222222
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        envFrom:
        - configMapRef: {name: cfg}
`
	const config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v\n"
	// Opted out under hash.example.com, with annotations of another prefix.
	other := strings.NewReplacer("name: web", "name: other", "confighash.dev/enabled", "hash.example.com/enabled").
		Replace(fmt.Sprintf(deployment, "confighash.dev"))
	tests := []struct {
		name, in, want string
		opts           inject.Options
	}{{
		name: "hash, key id and external list",
		in:   fmt.Sprintf(deployment, "confighash.dev"),
		want: strings.NewReplacer("    confighash.dev/external: Secret/vault-db\n", "",
			"      annotations:\n        confighash.dev/hash: v1-sha256:1111111111111111111111111111111111111111111111111111111111111111\n        confighash.dev/key-id: k1\n", "",
		).Replace(fmt.Sprintf(deployment, "confighash.dev")),
	}, {
		name: "under another prefix, only its own",
		in:   fmt.Sprintf(deployment, "hash.example.com") + "---\n" + other,
		opts: inject.Options{Prefix: "hash.example.com"},
		want: strings.NewReplacer("    hash.example.com/external: Secret/vault-db\n", "",
			"      annotations:\n        hash.example.com/hash: v1-sha256:1111111111111111111111111111111111111111111111111111111111111111\n        hash.example.com/key-id: k1\n", "",
		).Replace(fmt.Sprintf(deployment, "hash.example.com")) + "---\n" + other,
	}, {
		name: "a Job's, not its pod template's",
		in:   job,
		want: strings.Replace(job, "    confighash.dev/hash: v1-sha256:1111111111111111111111111111111111111111111111111111111111111111\n", "", 1),
	}, {
		name: "none to remove",
		in:   strings.Replace(job, "    confighash.dev/hash: v1-sha256:1111111111111111111111111111111111111111111111111111111111111111\n", "", 1),
		want: strings.Replace(job, "    confighash.dev/hash: v1-sha256:1111111111111111111111111111111111111111111111111111111111111111\n", "", 1),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes, err := kio.FromBytes([]byte(tt.in + "---\n" + config))
			require.NoError(t, err)
			var r inject.Report
			nodes, err = inject.Filter{Options: tt.opts, Report: &r}.Filter(nodes)
			require.NoError(t, err)
			got, err := kio.StringAll(nodes)
			require.NoError(t, err)
			assert.Equal(t, tt.want+"---\n"+config, got)
			for _, w := range r.Workloads {
				assert.True(t, w.OptedOut, w.String())
			}
		})
	}
}
