package status_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/status"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/postrenderer"
)

// predicted is a render with every kind status reports, reading configs
// whole, by key, optionally and from outside the render (ext).
func predicted() string {
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: app}
data: {A: "1", B: "2", UNREAD: x}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: p, user: u}
---
` + kubetest.Workload{Name: "by-key", Env: []string{kubetest.EnvKey("app", "A")}}.YAML() + `---
` + kubetest.Workload{Name: "whole", EnvFrom: []string{"{configMapRef: {name: app}}"}}.YAML() + `---
` + kubetest.Workload{Name: "secret-key", Env: []string{"{name: P, valueFrom: {secretKeyRef: {name: creds, key: password}}}"}}.YAML() + `---
` + kubetest.Workload{Name: "external", EnvFrom: []string{"{configMapRef: {name: ext}}"}, Env: []string{kubetest.EnvKey("app", "B")}}.YAML() + `---
` + kubetest.Workload{Kind: "StatefulSet", Name: "db", Spec: []string{"serviceName: db"}, EnvFrom: []string{"{secretRef: {name: creds}}"}}.YAML() + `---
` + kubetest.Workload{Kind: "DaemonSet", Name: "agent", Env: []string{kubetest.EnvKey("app", "B")}}.YAML() + `---
` + kubetest.Workload{Kind: "CronJob", Name: "nightly", EnvFrom: []string{"{configMapRef: {name: ext, optional: true}}", "{configMapRef: {name: app}}"}}.YAML()
}

// templates are the pod templates of the workloads of namespace as JSON,
// by Kind/name: a roll changes the pod template. (Not the generation: a
// Deployment's changes with its annotations too, where the controller keeps
// its baselines.)
func templates(t *testing.T, dyn dynamic.Interface, namespace string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, kind := range []struct {
		name string
		gvr  schema.GroupVersionResource
		path []string
	}{
		{"Deployment", appsv1.SchemeGroupVersion.WithResource("deployments"), []string{"spec", "template"}},
		{"StatefulSet", appsv1.SchemeGroupVersion.WithResource("statefulsets"), []string{"spec", "template"}},
		{"DaemonSet", appsv1.SchemeGroupVersion.WithResource("daemonsets"), []string{"spec", "template"}},
		{"CronJob", batchv1.SchemeGroupVersion.WithResource("cronjobs"), []string{"spec", "jobTemplate", "spec", "template"}},
	} {
		list, err := dyn.Resource(kind.gvr).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, item := range list.Items {
			tmpl, _, err := unstructured.NestedMap(item.Object, kind.path...)
			require.NoError(t, err)
			b, err := json.Marshal(tmpl)
			require.NoError(t, err)
			out[kind.name+"/"+item.GetName()] = string(b)
		}
	}
	return out
}

// TestStatusPredictsTheController: what status says with the controller
// stopped is what the controller then does. Over random edits of the
// configs (keys read and unread, in the render and outside it, removed and
// written again) in two namespaces, the workloads status calls STALE are
// exactly those the controller rolls once started; those it
// calls BLOCKED or current are not rolled; and once the controller is done
// every workload is current or blocked, with the controller's hash the live
// one where it rolled.
func TestStatusPredictsTheController(t *testing.T) {
	bin, cp, cs, dyn, mapper := privateCluster(t)
	ctx := context.Background()
	namespaces := []string{"north", "south"}
	for _, ns := range namespaces {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		rendered, _, err := postrenderer.Process([]byte(predicted()), inject.Options{DefaultNamespace: ns})
		require.NoError(t, err)
		require.NoError(t, kubetest.Apply(ctx, dyn, mapper, bytes.NewReader(rendered), kubetest.ApplyOptions{Namespace: ns, FieldManager: "helm"}))
		_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Data: map[string]string{"E": "1"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	collect := func() map[string]status.Workload {
		t.Helper()
		return collected(t, cs, status.Options{AllNamespaces: true}, status.Workload.ID)
	}
	allTemplates := func() map[string]string {
		out := map[string]string{}
		for _, ns := range namespaces {
			for k, v := range templates(t, dyn, ns) {
				kind, name, _ := strings.Cut(k, "/")
				out[kind+" "+ns+"/"+name] = v
			}
		}
		return out
	}
	settled := func(what string) map[string]status.Workload {
		t.Helper()
		var ws map[string]status.Workload
		eventually(t, what, func() bool {
			ws = collect()
			for _, w := range ws {
				if w.Config == status.ConfigStale {
					return false
				}
			}
			return true
		})
		return ws
	}
	controller := func() *kubetest.Process {
		return kubetest.StartProcess(t, "controller", filepath.Join(bin, "confighash-controller"), "--kubeconfig", cp.KubeconfigPath(),
			"--namespaces", "north,south", "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
			"--coalesce-window", "200ms", "--min-roll-interval", "0s")
	}

	// The first apply: the controller records its baselines, rolls nothing.
	before := allTemplates()
	for id, w := range collect() {
		assert.NotEqual(t, status.ConfigStale, w.Config, "%s after the first apply: %s", id, w.Reason)
	}
	proc := controller()
	settled("the controller takes over")
	proc.Signal(syscall.SIGTERM)
	assert.Equal(t, before, allTemplates(), "the first apply rolls nothing")

	r := rand.New(rand.NewPCG(7, 11))
	var stale, blocked int
	for round := range 8 {
		// Edits while no controller runs.
		for range 1 + r.IntN(3) {
			ns := namespaces[r.IntN(len(namespaces))]
			value := fmt.Sprintf("round-%d-%d", round, r.IntN(1000))
			switch r.IntN(4) {
			case 0:
				key := []string{"A", "B", "UNREAD"}[r.IntN(3)]
				_, err := kubetest.Edit(ctx, cs.CoreV1().ConfigMaps(ns), "app", "", func(cm *corev1.ConfigMap) {
					if r.IntN(3) == 0 {
						delete(cm.Data, key)
					} else {
						cm.Data[key] = value
					}
				})
				require.NoError(t, err)
			case 1:
				_, err := kubetest.Edit(ctx, cs.CoreV1().Secrets(ns), "creds", "", func(s *corev1.Secret) {
					s.Data[[]string{"password", "user"}[r.IntN(2)]] = []byte(value)
				})
				require.NoError(t, err)
			case 2:
				_, err := kubetest.Edit(ctx, cs.CoreV1().ConfigMaps(ns), "ext", "", func(cm *corev1.ConfigMap) { cm.Data["E"] = value })
				require.NoError(t, err)
			default:
				_, err := kubetest.Edit(ctx, cs.CoreV1().ConfigMaps(ns), "app", "", func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"round": value} })
				require.NoError(t, err)
			}
		}
		prediction := collect()
		var wantRolled []string
		for id, w := range prediction {
			switch w.Config {
			case status.ConfigStale:
				wantRolled = append(wantRolled, id)
				stale++
			case status.ConfigBlocked:
				blocked++
			}
		}
		slices.Sort(wantRolled)
		before := allTemplates()

		proc := controller()
		settled(fmt.Sprintf("round %d: the controller rolls what status called stale", round))
		// A few coalescing windows more, for a roll status did not
		// predict to show.
		time.Sleep(2 * time.Second)
		proc.Signal(syscall.SIGTERM)
		after := collect()
		var rolled []string
		for id, tmpl := range allTemplates() {
			if tmpl != before[id] {
				rolled = append(rolled, id)
			}
		}
		slices.Sort(rolled)
		assert.Equal(t, wantRolled, rolled, "round %d: rolled by the controller vs STALE in status", round)
		for _, id := range rolled {
			assert.Equal(t, status.ConfigCurrent, after[id].Config, "round %d: %s after its roll", round, id)
			assert.Equal(t, after[id].LiveHash, after[id].ControllerHash, "round %d: %s: the controller's record is the live hash", round, id)
		}
		for id, w := range prediction {
			if w.Config == status.ConfigBlocked {
				assert.Equal(t, status.ConfigBlocked, after[id].Config, "round %d: %s waits for its config", round, id)
			}
		}
	}
	assert.Positive(t, stale, "no edit made a workload stale")
	assert.Positive(t, blocked, "no edit removed a key a workload reads")
	t.Logf("%d stale predictions, %d blocked", stale, blocked)
}
