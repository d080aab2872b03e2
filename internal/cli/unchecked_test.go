package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/inject"
)

const hashKey = "confighash.dev/hash"

// TestUncheckedHashes: which objects carry a hash verify did not check, and
// where.
func TestUncheckedHashes(t *testing.T) {
	read := &inject.Report{Workloads: []inject.Workload{{Object: inject.Object{Kind: "Deployment", Name: "web"}}}}
	tests := []struct {
		name, input string
		want        []string
	}{
		{"no hash anywhere", "kind: CloneSet\nmetadata: {name: a}\nspec: {template: {metadata: {}}}\n", nil},
		{"a workload verify read", "kind: Deployment\nmetadata: {name: web}\nspec: {template: {metadata: {annotations: {" + hashKey + ": x}}}}\n", nil},
		{"a CRD's pod template", "kind: CloneSet\nmetadata: {name: a, namespace: shop}\nspec: {template: {metadata: {annotations: {" + hashKey + ": x}}}}\n",
			[]string{"CloneSet shop/a: " + hashKey + " at spec.template.metadata.annotations, not checked"}},
		{"in a list of templates", "kind: Workflow\nmetadata: {name: w}\nspec: {templates: [{}, {metadata: {annotations: {" + hashKey + ": x}}}]}\n",
			[]string{"Workflow w: " + hashKey + " at spec.templates[1].metadata.annotations, not checked"}},
		{"an item of a List", "kind: List\nitems:\n- kind: CloneSet\n  metadata: {name: a}\n  spec: {template: {metadata: {annotations: {" + hashKey + ": x}}}}\n",
			[]string{"CloneSet a: " + hashKey + " at spec.template.metadata.annotations, not checked"}},
		{"the object's own annotations are not a pod template's", "kind: Service\nmetadata: {name: s, annotations: {" + hashKey + ": x}}\n", nil},
		{"another prefix", "kind: CloneSet\nmetadata: {name: a}\nspec: {template: {metadata: {annotations: {other.dev/hash: x}}}}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := uncheckedHashes([]byte(tt.input), hashKey, read)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := uncheckedHashes([]byte("kind: CloneSet\nspec: {a: "+hashKey+"\n  b: [\n"), hashKey, read)
	assert.Error(t, err, "input holding the key must be YAML")
}

// FuzzUncheckedHashes: any input gives a list or an error, never a panic,
// and each entry names the key.
func FuzzUncheckedHashes(f *testing.F) {
	f.Add("kind: CloneSet\nmetadata: {name: a}\nspec: {template: {metadata: {annotations: {" + hashKey + ": x}}}}\n")
	f.Add("kind: List\nitems: [{kind: X, metadata: {name: b}, spec: {t: [{annotations: {" + hashKey + ": y}}]}}]\n---\na: &x [*x]\n")
	// Kinds of the shared corpus that hold a pod template confighash reads
	// only when told to: a Prometheus and an Alertmanager (podMetadata),
	// an Argo Rollout in a namespace, and the hash key as a value, not a key.
	f.Add("apiVersion: monitoring.coreos.com/v1\nkind: Prometheus\nmetadata:\n  name: k8s\n  namespace: monitoring\nspec:\n  podMetadata:\n    annotations:\n      " + hashKey + ": v1-sha256:00\n    labels:\n      app.kubernetes.io/name: prometheus\n")
	f.Add("apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r, namespace: argocd}\nspec:\n  template:\n    metadata:\n      annotations: {\"" + hashKey + "\": x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: " + hashKey + "}\n")
	f.Add("kind: Alertmanager\nmetadata: {name: main}\nspec:\n  podMetadata: {annotations: {" + hashKey + ": a}}\n  containers: [{name: c, env: [{name: X, value: " + hashKey + "}]}]\n")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := uncheckedHashes([]byte(s), hashKey, &inject.Report{})
		if err != nil {
			return
		}
		for _, g := range got {
			if !strings.Contains(g, hashKey+" at spec") {
				t.Fatalf("entry %q does not name the key and where", g)
			}
		}
	})
}
