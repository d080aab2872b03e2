package postrenderer_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listItems are the objects the List tests wrap in kind: List documents: a
// ConfigMap and a Secret, and workloads that consume them, laid out as users
// write them (no template metadata, metadata: {}, existing annotations, a
// stale hash, a CronJob's nested template, a use of a config outside the
// stream, an opt-out).
var listItems = []string{
	`apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
  level: "3"`,
	`apiVersion: v1
kind: Secret
metadata:
  name: token
stringData:
  token: s3cr3t`,
	`apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  selector:
    matchLabels: {app: api}
  template:
    spec:
      containers:
      - name: api
        image: api:1
        envFrom:
        - configMapRef:
            name: settings`,
	`apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  annotations:
    team: data
spec:
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata: {}
    spec:
      containers:
      - name: db
        image: db:1
        env:
        - name: TOKEN
          valueFrom:
            secretKeyRef:
              name: token
              key: token
        - name: LEVEL
          valueFrom:
            configMapKeyRef:
              name: elsewhere
              key: level`,
	`apiVersion: batch/v1
kind: CronJob
metadata:
  name: sweep
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template:
        metadata:
          labels: {app: sweep}
          annotations:
            confighash.dev/hash: v1-sha256:0000
        spec:
          restartPolicy: Never
          containers:
          - name: sweep
            image: sweep:1
            volumeMounts:
            - name: settings
              mountPath: /etc/sweep
          volumes:
          - name: settings
            configMap:
              name: settings
              items:
              - key: mode
                path: mode`,
	`apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  annotations:
    confighash.dev/enabled: "false"
spec:
  selector:
    matchLabels: {app: agent}
  template:
    spec:
      containers:
      - name: agent
        image: agent:1
        envFrom:
        - configMapRef:
            name: settings`,
}

// workloadAnnotations returns, for each workload, its pod template's hash and
// its external list: what confighash writes.
func workloadAnnotations(objs map[string]*yaml.RNode) map[string]string {
	out := map[string]string{}
	for id, n := range objs {
		if n.GetKind() == "ConfigMap" || n.GetKind() == "Secret" {
			continue
		}
		tpl, _ := n.Pipe(yaml.Lookup("spec", "template"))
		if tpl == nil {
			tpl, _ = n.Pipe(yaml.Lookup("spec", "jobTemplate", "spec", "template"))
		}
		var hash string
		if tpl != nil {
			hash = tpl.GetAnnotations()[hashKey]
		}
		out[id] = fmt.Sprintf("hash=%q external=%q", hash, n.GetAnnotations()["confighash.dev/external"])
	}
	return out
}

// TestListItems: a workload inside a v1 List document (kubectl and Helm
// create each item) gets the hash and the external list it gets as a
// document of its own, in stream mode, in KRM mode and through the real
// Helm 3 and Helm 4.
func TestListItems(t *testing.T) {
	flat := strings.Join(listItems, "\n---\n") + "\n"
	cases := []struct {
		name   string
		stream string
	}{
		{"everything in one List", testtools.List(listItems...)},
		{"configs outside, workloads in a List", strings.Join(listItems[:2], "\n---\n") + "\n---\n" + testtools.List(listItems[2:]...)},
		{"configs in a List, workloads outside", testtools.List(listItems[:2]...) + "---\n" + strings.Join(listItems[2:], "\n---\n") + "\n"},
		{"one workload per List", testtools.List(listItems[:2]...) + "---\n" + testtools.List(listItems[2:3]...) + "---\n" + testtools.List(listItems[3:4]...) + "---\n" + testtools.List(listItems[4:5]...) + "---\n" + testtools.List(listItems[5:]...)},
		{"a List in flow style", "apiVersion: v1\nkind: List\nitems: [" + jsonItems(t, listItems) + "]\n"},
		{"items indented under items", "apiVersion: v1\nkind: List\nitems:\n" + testtools.Items("    ", listItems...)},
		// kubectl, Helm and kustomize take the items out of any kind
		// whose name ends in List.
		{"a typed list of another group", strings.Join(listItems[:2], "\n---\n") + "\n---\n" +
			strings.Replace(testtools.List(listItems[2:3]...), "apiVersion: v1\nkind: List\n", "apiVersion: apps/v1\nkind: DeploymentList\n", 1) +
			"---\n" + strings.Join(listItems[3:], "\n---\n") + "\n"},
		{"a ConfigMapList", strings.Replace(testtools.List(listItems[:1]...), "kind: List\n", "kind: ConfigMapList\n", 1) + "---\n" +
			strings.Replace(testtools.List(listItems[1:2]...), "kind: List\n", "kind: SecretList\n", 1) + "---\n" + testtools.List(listItems[2:]...)},
		// The items of a typed list may name no apiVersion and kind:
		// kubectl and Helm create them as the list's kind without "List".
		{"typed lists whose items name no kind", testtools.TypedList("v1", "ConfigMapList", listItems[:1]...) + "---\n" +
			testtools.TypedList("v1", "SecretList", listItems[1:2]...) + "---\n" + testtools.TypedList("apps/v1", "DeploymentList", listItems[2:3]...) + "---\n" +
			testtools.TypedList("apps/v1", "StatefulSetList", listItems[3:4]...) + "---\n" + strings.Join(listItems[4:], "\n---\n") + "\n"},
		{"CRLF line ends", strings.ReplaceAll(testtools.List(listItems...), "\n", "\r\n")},
		// YAML reads a lone carriage return as a line break; the editor
		// does not, so the document is written anew, every item at once.
		{"carriage returns alone", strings.ReplaceAll(testtools.List(listItems...), "\n", "\r")},
		// A stale hash written as a block scalar cannot be edited in place:
		// the List is written anew with every workload's annotations.
		{"a stale hash in a block scalar", strings.Replace(testtools.List(listItems...), "confighash.dev/hash: v1-sha256:0000",
			"confighash.dev/hash: |-\n                v1-sha256:0000", 1)},
		{"a List with a comment and a Helm 4 file annotation", "# Source: c/templates/list.yaml\n" + strings.Replace(testtools.List(listItems...),
			"kind: List\n", "kind: List\nmetadata:\n  annotations:\n    postrenderer.helm.sh/postrender-filename: 'c/templates/list.yaml'\n", 1)},
	}
	opts := inject.Options{DefaultNamespace: namespace}
	want, _, err := postrenderer.Process([]byte(flat), opts)
	if err != nil {
		t.Fatal(err)
	}
	// The same objects as documents of their own: stream mode and the KRM
	// function agree on them (kustomize and kpt hand a List's items to a
	// function one by one).
	differential(t, []byte(flat), opts)
	wantAnn := workloadAnnotations(testtools.Objects(t, string(want)))
	for _, id := range []string{"Deployment//api", "StatefulSet//db", "CronJob//sweep"} {
		if !strings.Contains(wantAnn[id], "v1-sha256:") || strings.Contains(wantAnn[id], "v1-sha256:0000") {
			t.Fatalf("the flat stream's %s is not hashed: %s", id, wantAnn[id])
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := postrenderer.Process([]byte(tc.stream), opts)
			if err != nil {
				t.Fatal(err)
			}
			assertByWorkload(t, "stream mode", workloadAnnotations(testtools.Objects(t, string(out))), wantAnn)
			differential(t, []byte(tc.stream), opts)
		})
	}
}

// jsonItems writes objects as JSON, comma-separated.
func jsonItems(t *testing.T, objs []string) string {
	t.Helper()
	var parts []string
	for _, o := range objs {
		n, err := yaml.Parse(o)
		if err != nil {
			t.Fatal(err)
		}
		j, err := n.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(j))
	}
	return strings.Join(parts, ", ")
}

// TestListItemsHelm renders a chart whose template emits a List with the
// real Helm 3 and Helm 4 and confighash as the post-renderer: each workload
// item carries what it carries when the chart emits the items as documents.
func TestListItemsHelm(t *testing.T) {
	for _, version := range []int{3, 4} {
		t.Run(fmt.Sprintf("helm%d", version), func(t *testing.T) {
			h := newHelm(t, version)
			flat := copyChart(t, exampleChart(t))
			writeFile(t, filepath.Join(flat, "templates", "items.yaml"), strings.Join(listItems, "\n---\n")+"\n")
			want := workloadAnnotations(testtools.Objects(t, h.template(t, flat, true)))
			if !strings.Contains(want["Deployment//api"], "v1-sha256:") {
				t.Fatalf("the flat chart's Deployment is not hashed: %v", want)
			}
			for name, items := range map[string]string{
				"a v1 List": testtools.List(listItems...),
				// Helm creates a typed list's items that name no kind as
				// the list's kind without "List".
				"typed lists whose items name no kind": testtools.TypedList("v1", "ConfigMapList", listItems[:1]...) + "---\n" +
					testtools.TypedList("v1", "SecretList", listItems[1:2]...) + "---\n" +
					testtools.TypedList("apps/v1", "DeploymentList", listItems[2:3]...) + "---\n" + testtools.List(listItems[3:]...),
			} {
				list := copyChart(t, exampleChart(t))
				writeFile(t, filepath.Join(list, "templates", "items.yaml"), items)
				got := workloadAnnotations(testtools.Objects(t, h.template(t, list, true)))
				assertByWorkload(t, fmt.Sprintf("helm%d, %s", version, name), got, want)
			}
		})
	}
}

// TestListNamedKindsThatHoldNoObjects: a custom resource whose kind ends in
// List (a BlockList, an AllowList) may have a top-level items field of
// values that are not objects. confighash does not read such a kind: the
// document is copied as it is, as before lists of every group were read,
// and the render does not fail. A v1 List is held to its schema.
func TestListNamedKindsThatHoldNoObjects(t *testing.T) {
	tests := []struct {
		name, doc string
		wantErr   bool
	}{
		{"scalar items", "apiVersion: example.com/v1\nkind: BlockList\nmetadata: {name: x}\nitems: [10.0.0.1, 10.0.0.2]\n", false},
		{"nested lists", "apiVersion: example.com/v1\nkind: AllowList\nmetadata: {name: x}\nitems:\n- [a, b]\n- c\n", false},
		{"mixed", "apiVersion: example.com/v1\nkind: RuleList\nmetadata: {name: x}\nitems:\n- 1\n- {kind: Rule, metadata: {name: r}}\n", false},
		{"v1 List of values", "apiVersion: v1\nkind: List\nitems: [a]\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := postrenderer.Process([]byte(tt.doc), inject.Options{})
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.doc, string(out))
		})
	}
}
