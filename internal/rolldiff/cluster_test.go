package rolldiff_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/rolldiff"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
)

func TestMain(m *testing.M) { os.Exit(cptest.Run(m)) }

// clusterApp is a Deployment that reads one key of a ConfigMap, with the
// fields a chart writes in more than one way.
const clusterApp = `apiVersion: v1
kind: ConfigMap
metadata: {name: app, namespace: NS}
data: {LOG_LEVEL: info, UNUSED: x}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: NS}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      tolerations: []
      containers:
      - name: web
        image: web:1
        ports: []
        resources: {limits: {cpu: 1000m, memory: 1024Mi}}
        env:
        - name: LOG_LEVEL
          valueFrom: {configMapKeyRef: {name: app, key: LOG_LEVEL}}
`

// probes are a container's probes and lifecycle handler, with the fields
// the API server defaults left out.
const probes = `        livenessProbe: {httpGet: {port: 80}}
        readinessProbe: {tcpSocket: {port: 80}, periodSeconds: 5}
        lifecycle: {preStop: {httpGet: {port: 80, path: /stop}}}
`

// TestClusterAgrees: what diff says of a Deployment is what the real
// Deployment controller does when the two renders, hashed by confighash,
// are applied one after the other: a new ReplicaSet exactly when diff says
// the workload rolls.
func TestClusterAgrees(t *testing.T) {
	cp := cptest.Shared(t)
	admin := cp.RESTConfig()
	cs, dyn, mapper := kubetest.Clients(t, admin)
	tests := []struct {
		name          string
		before, after []string // replacements in clusterApp for each render
		rolls         bool
	}{
		{"empty lists left out", nil, []string{"      tolerations: []\n", "", "        ports: []\n", ""}, false},
		{"resources: {} left out", []string{"{limits: {cpu: 1000m, memory: 1024Mi}}", "{}"},
			[]string{"        resources: {}\n", ""}, false},
		{"the same quantities written another way", nil, []string{"{cpu: 1000m, memory: 1024Mi}", `{cpu: "1", memory: 1Gi}`}, false},
		{"another quantity", nil, []string{"cpu: 1000m", "cpu: 1001m"}, true},
		{"a key the workload reads", nil, []string{"LOG_LEVEL: info", "LOG_LEVEL: debug"}, true},
		{"a key nobody reads", nil, []string{"UNUSED: x", "UNUSED: z"}, false},
		{"defaults written out", []string{
			"        ports: []\n", "        ports: [{containerPort: 80}]\n",
			"      tolerations: []\n", "      tolerations: []\n      volumes: [{name: v, configMap: {name: app}}, {name: s, secret: {secretName: s, optional: true}}]\n",
		}, []string{
			"        image: web:1\n", "        image: web:1\n        imagePullPolicy: IfNotPresent\n        terminationMessagePath: /dev/termination-log\n        terminationMessagePolicy: File\n",
			"{containerPort: 80}", "{containerPort: 80, protocol: TCP}",
			"{name: v, configMap: {name: app}}, {name: s, secret: {secretName: s, optional: true}}", "{name: v, configMap: {name: app, defaultMode: 420}}, {name: s, secret: {secretName: s, optional: true, defaultMode: 0644}}",
			"      tolerations: []\n", "      tolerations: []\n      restartPolicy: Always\n      dnsPolicy: ClusterFirst\n      terminationGracePeriodSeconds: 30\n      schedulerName: default-scheduler\n      securityContext: {}\n",
		}, false},
		{"a default changed", nil, []string{"        image: web:1\n", "        image: web:1\n        imagePullPolicy: Always\n"}, true},
		{"probe, handler and field reference defaults written out", []string{
			"        image: web:1\n", "        image: web:1\n" + probes,
			"        env:\n", "        env:\n        - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n",
		}, []string{
			"        livenessProbe: {httpGet: {port: 80}}\n", "        livenessProbe: {httpGet: {port: 80, path: /, scheme: HTTP}, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3}\n",
			"        readinessProbe: {tcpSocket: {port: 80}, periodSeconds: 5}\n", "        readinessProbe: {tcpSocket: {port: 80}, periodSeconds: 5, timeoutSeconds: 0}\n",
			"{preStop: {httpGet: {port: 80, path: /stop}}}", "{preStop: {httpGet: {port: 80, path: /stop, scheme: HTTP}}}",
			"{fieldRef: {fieldPath: metadata.name}}", "{fieldRef: {fieldPath: metadata.name, apiVersion: v1}}",
		}, false},
		// Written out, these are not what the API server defaults to: the
		// Deployment rolls.
		{"enableServiceLinks written out", nil, []string{"      tolerations: []\n", "      tolerations: []\n      enableServiceLinks: true\n"}, true},
		{"a resource field reference's divisor written out", []string{"        env:\n", "        env:\n        - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}\n"},
			[]string{"{resource: limits.cpu}", "{resource: limits.cpu, divisor: \"1\"}"}, true},
		{"volume defaults written out", []string{"      tolerations: []\n", "      tolerations: []\n      volumes:\n" +
			"      - {name: d, downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}}\n" +
			"      - {name: p, projected: {sources: [{downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}}]}}\n" +
			"      - {name: h, hostPath: {path: /tmp}}\n"},
			[]string{"{name: d, downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}}", "{name: d, downwardAPI: {defaultMode: 420, items: [{path: name, fieldRef: {fieldPath: metadata.name, apiVersion: v1}}]}}",
				"{downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}}", "{downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name, apiVersion: v1}}]}}",
				"{path: /tmp}", "{path: /tmp, type: \"\"}"}, false},
		{"the service account under its old name too", []string{"      tolerations: []\n", "      tolerations: []\n      serviceAccountName: sa\n"},
			[]string{"      serviceAccountName: sa\n", "      serviceAccountName: sa\n      serviceAccount: sa\n"}, false},
		{"the service account under its old name only", []string{"      tolerations: []\n", "      tolerations: []\n      serviceAccountName: sa\n"},
			[]string{"      serviceAccountName: sa\n", "      serviceAccount: sa\n"}, false},
		// Maps stored empty are no maps (Go maps, omitempty); a struct
		// written empty is one (a pointer), and the Deployment rolls.
		{"empty maps left out", []string{"      tolerations: []\n", "      tolerations: []\n      nodeSelector: {}\n",
			"    metadata: {labels: {app: web}}\n", "    metadata: {labels: {app: web}, annotations: {}}\n",
			"{limits: {cpu: 1000m, memory: 1024Mi}}", "{limits: {cpu: 1000m, memory: 1024Mi}, requests: {}}"},
			[]string{"      nodeSelector: {}\n", "", ", annotations: {}", "", ", requests: {}", ""}, false},
		{"a boolean as YAML 1.1 spells it", []string{"        image: web:1\n", "        image: web:1\n        tty: yes\n"},
			[]string{"        tty: yes\n", "        tty: true\n"}, false},
		{"zero values written out", []string{"        image: web:1\n", "        image: web:1\n        readinessProbe: {tcpSocket: {port: 80}}\n",
			"        env:\n", "        env:\n        - {name: EMPTY}\n"},
			[]string{"      tolerations: []\n", "      tolerations: []\n      hostNetwork: false\n      priorityClassName: \"\"\n      dnsPolicy: \"\"\n",
				"        image: web:1\n", "        image: web:1\n        tty: false\n",
				"{tcpSocket: {port: 80}}", "{tcpSocket: {port: 80}, initialDelaySeconds: 0}",
				"{name: EMPTY}", "{name: EMPTY, value: \"\"}"}, false},
		{"affinity: {} left out", []string{"      tolerations: []\n", "      tolerations: []\n      affinity: {}\n"},
			[]string{"      affinity: {}\n", ""}, true},
		// The pod template is another one to the Deployment controller:
		// a real upgrade that only reorders them rolls.
		{"volumes reordered", []string{"      tolerations: []\n", "      tolerations: []\n      volumes: [{name: a, emptyDir: {}}, {name: b, emptyDir: {}}]\n"},
			[]string{"[{name: a, emptyDir: {}}, {name: b, emptyDir: {}}]", "[{name: b, emptyDir: {}}, {name: a, emptyDir: {}}]"}, true},
		{"containers reordered", []string{"      containers:\n", "      containers:\n      - {name: sidecar, image: sidecar:1}\n"},
			[]string{"      - {name: sidecar, image: sidecar:1}\n", "", "          valueFrom: {configMapKeyRef: {name: app, key: LOG_LEVEL}}\n", "          valueFrom: {configMapKeyRef: {name: app, key: LOG_LEVEL}}\n      - {name: sidecar, image: sidecar:1}\n"}, true},
		{"a probe's period changed", []string{
			"        image: web:1\n", "        image: web:1\n" + probes,
		}, []string{"periodSeconds: 5", "periodSeconds: 6"}, true},
	}
	edit := func(t *testing.T, s string, pairs []string) string {
		t.Helper()
		for j := 0; j+1 < len(pairs); j += 2 {
			require.Contains(t, s, pairs[j])
			s = strings.Replace(s, pairs[j], pairs[j+1], 1)
		}
		return s
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("agree-%d", i)
			old := edit(t, strings.ReplaceAll(clusterApp, "NS", ns), tc.before)
			cur := edit(t, old, tc.after)
			res := compare(t, old, cur, inject.Options{})
			web := byID(res)["Deployment/web"]
			assert.Equal(t, tc.rolls, web.Status == rolldiff.StatusRolls, "diff: %v", web.Why())

			ctx := t.Context()
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
			for n, stream := range []string{old, cur} {
				rendered := render(t, stream, inject.Options{})
				require.NoError(t, kubetest.Apply(ctx, dyn, mapper, strings.NewReader(rendered), kubetest.ApplyOptions{FieldManager: "argocd"}))
				if n == 0 {
					// What kubectl get -o yaml prints of the applied render
					// (status, managedFields, the defaults) diffs as the
					// render does.
					live := liveList(t, dyn, ns)
					next := render(t, cur, inject.Options{})
					want := byID(compare(t, rendered, next, inject.Options{}))["Deployment/web"]
					got := byID(compare(t, live, next, inject.Options{}))["Deployment/web"]
					assert.Equal(t, want.Status, got.Status, "live state as OLD: %v", got.Why())
					assert.Equal(t, web.Status, got.Status, "live state as OLD: %v", got.Why())
					same := byID(compare(t, live, rendered, inject.Options{}))["Deployment/web"]
					assert.Equal(t, rolldiff.StatusUnchanged, same.Status, "live state against the render applied: %v", same.Why())
					assert.Empty(t, same.StaleHashes)
				}
				want := 1
				if n == 1 && web.Status == rolldiff.StatusRolls {
					want = 2
				}
				// Once the controller has seen the last generation, the
				// ReplicaSets it made for it are there.
				kubetest.Eventually(t, time.Minute, 100*time.Millisecond, fmt.Sprintf("render %d: %d ReplicaSets", n, want), func(ctx context.Context) (bool, error) {
					d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
					if err != nil || d.Status.ObservedGeneration != d.Generation {
						return false, err
					}
					rs, err := kubetest.OwnedReplicaSets(ctx, cs, ns, d.UID)
					return len(rs) == want, err
				})
			}
		})
	}
}

// liveList is the ConfigMap app and Deployment web of namespace as kubectl
// get -o yaml prints them: one v1 List, with what the API server adds.
func liveList(t *testing.T, dyn dynamic.Interface, namespace string) string {
	t.Helper()
	var items []any
	for _, r := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{corev1.SchemeGroupVersion.WithResource("configmaps"), "app"}, {appsv1.SchemeGroupVersion.WithResource("deployments"), "web"}} {
		obj, err := dyn.Resource(r.gvr).Namespace(namespace).Get(t.Context(), r.name, metav1.GetOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, obj.GetManagedFields())
		items = append(items, obj.Object)
	}
	b, err := sigsyaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items})
	require.NoError(t, err)
	return string(b)
}
