package status_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/status"
	"github.com/confighash/confighash/internal/testing/controlplane"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/statustest"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

// canary is a Secret value no output may show.
const canary = "CANARY-s3cr3t"

// hostileRender is a Secret and a ConfigMap read by a Deployment, a
// CronJob, a standalone ReplicaSet and a Pod.
func hostileRender() string {
	return `apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: ` + canary + `, pin: "0012"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app}
data: {LOG_LEVEL: info}
---
` + kubetest.Workload{Name: "web", Replicas: 1, EnvFrom: []string{"{secretRef: {name: creds}}"}}.YAML() + `---
` + kubetest.Workload{Kind: "CronJob", Name: "nightly", Env: []string{"{name: P, valueFrom: {secretKeyRef: {name: creds, key: password}}}"}}.YAML() + `---
` + kubetest.Workload{Kind: "ReplicaSet", Name: "loner", Replicas: 1, EnvFrom: []string{"{configMapRef: {name: app}}"}}.YAML() + `---
apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  containers:
  - {name: c, image: c:1, envFrom: [{configMapRef: {name: app}}]}
`
}

// TestStatusOfWorkloadsUsersHave runs the built plugin on the real control
// plane against what users have besides Deployments, and checks that no
// output (table, JSON, errors) ever holds a Secret's value or its base64:
//   - a CronJob reading one key of a Secret is reported, current, then stale
//     once that Secret is rotated, with exit 0 (stale is a finding, not an
//     error); a standalone ReplicaSet and a Pod carrying the hash are not
//     workloads the controller manages and are left out;
//   - a render hashed with an HMAC key is current with the key, stale with
//     it after a rotation; without the key, with a plain render and a key,
//     or with another key, CONFIG is UNKNOWN saying which and what to pass,
//     and the configs are not called external (before, status answered
//     "current" whatever the Secret held, as a controller in the other mode
//     would take every config for external and record a baseline);
//   - a user with exactly the reads docs/status.md lists, on a cluster that
//     serves no Argo Rollouts, gets the report and exit 0 (before, the
//     refused list of rollouts.argoproj.io failed it, reading "unknown");
//   - a user who may not read the Secret gets UNKNOWN naming it, exit 1; in
//     a namespace where the user may list nothing, or with -A, only the
//     error naming the refused lists, nothing on standard output;
//   - a paused Deployment whose template changed, a suspended CronJob and an
//     OnDelete StatefulSet whose template changed say so in their rollout,
//     rather than "in progress" for ever; the paused Deployment's pods run an
//     older template (before, they were counted as current: 0/1);
//   - --request-timeout 0 is no timeout, as for kubectl;
//   - the Secret deleted: BLOCKED naming it.
func TestStatusOfWorkloadsUsersHave(t *testing.T) {
	bin, cp, cs, dyn, mapper := privateCluster(t)
	ctx := context.Background()
	plugin := filepath.Join(bin, "kubectl-confighash")
	secrets := []string{canary, base64.StdEncoding.EncodeToString([]byte(canary)), "Q0FOQVJZ"}
	run := func(env []string, args ...string) testtools.Result {
		t.Helper()
		res := testtools.Run(t, "", env, nil, plugin, append([]string{"status"}, args...)...)
		for _, s := range secrets {
			assert.NotContains(t, res.Stdout+res.Stderr, s, "%s: a Secret value", args)
		}
		return res
	}
	for _, tc := range []struct{ namespace, key string }{{"plain", ""}, {"keyed", "k3y"}} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.namespace}}, metav1.CreateOptions{})
		require.NoError(t, err)
		rendered, _, err := postrenderer.Process([]byte(hostileRender()), inject.Options{DefaultNamespace: tc.namespace, Key: []byte(tc.key)})
		require.NoError(t, err)
		require.NoError(t, kubetest.Apply(ctx, dyn, mapper, bytes.NewReader(rendered), kubetest.ApplyOptions{Namespace: tc.namespace, FieldManager: "helm"}))
	}
	rotate := func(namespace string) {
		t.Helper()
		_, err := kubetest.Edit(ctx, cs.CoreV1().Secrets(namespace), "creds", "", func(s *corev1.Secret) {
			s.Data["password"] = []byte(canary + "-rotated")
		})
		require.NoError(t, err)
	}
	kc := cp.KubeconfigPath()

	t.Run("CronJob, standalone ReplicaSet and Pod", func(t *testing.T) {
		res := run(nil, "--kubeconfig", kc, "-n", "plain")
		require.Equal(t, 0, res.ExitCode, res.Stderr)
		assert.Empty(t, res.Stderr)
		assert.Regexp(t, `CronJob plain/nightly\s+current\s+v1-sha256:`, res.Stdout)
		assert.Regexp(t, `Deployment plain/web\s+current\s+v1-sha256:`, res.Stdout)
		assert.Contains(t, res.Stdout, "CronJob plain/nightly consumes Secret/creds (keys password)\n")
		assert.NotContains(t, res.Stdout, "loner")
		assert.NotContains(t, res.Stdout, "solo")
		ws := statustest.Workloads(t, run(nil, "--kubeconfig", kc, "-n", "plain", "--json").Stdout)
		assert.Len(t, ws, 2, "the CronJob and the Deployment")
		// --request-timeout 0 is no timeout, as for kubectl.
		res = run(nil, "--kubeconfig", kc, "-n", "plain", "--request-timeout", "0")
		assert.Equal(t, 0, res.ExitCode, res.Stderr)
		assert.Contains(t, res.Stdout, "CronJob plain/nightly")

		rotate("plain")
		res = run(nil, "--kubeconfig", kc, "-n", "plain")
		assert.Equal(t, 0, res.ExitCode, "stale is reported, not an error: %s", res.Stderr)
		assert.Regexp(t, `CronJob plain/nightly\s+STALE \(render-hash-mismatch\)`, res.Stdout)
		assert.Regexp(t, `Deployment plain/web\s+STALE \(render-hash-mismatch\)`, res.Stdout)
		assert.Equal(t, status.ConfigStale, statustest.Workloads(t, run(nil, "--kubeconfig", kc, "-n", "plain", "--json").Stdout)["CronJob/nightly"].Config)
	})

	t.Run("HMAC key", func(t *testing.T) {
		withKey := []string{"CONFIGHASH_HMAC_KEY=k3y"}
		res := run(withKey, "--kubeconfig", kc, "-n", "keyed")
		require.Equal(t, 0, res.ExitCode, res.Stderr)
		assert.Regexp(t, `Deployment keyed/web\s+current\s+v1-hmac-sha256:`, res.Stdout)
		for _, tc := range []struct {
			name, column, stderr, mismatch string
			env                            []string
		}{
			{name: "no key", column: "UNKNOWN (hashed with an HMAC key: pass --hmac-key-file)",
				stderr: "made with an HMAC key status was not given: pass the controller's key with --hmac-key-file", mismatch: "keyed"},
			{name: "another key", env: []string{"CONFIGHASH_HMAC_KEY=other"}, column: "UNKNOWN (hashed with another HMAC key, key-id " + hashing.KeyID([]byte("k3y")) + ")",
				stderr: "made with another HMAC key (key-id " + hashing.KeyID([]byte("k3y")) + ", not " + hashing.KeyID([]byte("other")) + ")", mismatch: "other-key"},
		} {
			res := run(tc.env, "--kubeconfig", kc, "-n", "keyed")
			assert.Equal(t, 1, res.ExitCode, "%s: %s", tc.name, res.Stderr)
			assert.Regexp(t, `CronJob keyed/nightly\s+`+regexp.QuoteMeta(tc.column), res.Stdout, tc.name)
			assert.Contains(t, res.Stdout, "CronJob keyed/nightly consumes Secret/creds (keys password)\n", "%s: not external", tc.name)
			assert.Contains(t, res.Stderr, tc.stderr, tc.name)
			assert.Contains(t, res.Stderr, "CronJob keyed/nightly", tc.name)
			ws := statustest.Workloads(t, run(tc.env, "--kubeconfig", kc, "-n", "keyed", "--json").Stdout)
			assert.Equal(t, status.ConfigUnknown, ws["Deployment/web"].Config, tc.name)
			assert.Equal(t, tc.mismatch, string(ws["Deployment/web"].KeyMismatch), tc.name)
			assert.False(t, ws["Deployment/web"].Configs[0].External, tc.name)
		}
		// A plain render, read with a key.
		res = run(withKey, "--kubeconfig", kc, "-n", "plain")
		assert.Equal(t, 1, res.ExitCode, res.Stderr)
		assert.Regexp(t, `Deployment plain/web\s+`+regexp.QuoteMeta("UNKNOWN (hashed without an HMAC key, status was given one)"), res.Stdout)
		assert.Contains(t, res.Stderr, "made without an HMAC key, and status was given one")

		rotate("keyed")
		res = run(withKey, "--kubeconfig", kc, "-n", "keyed")
		assert.Equal(t, 0, res.ExitCode, res.Stderr)
		assert.Regexp(t, `Deployment keyed/web\s+STALE \(render-hash-mismatch\)`, res.Stdout)
		res = run(nil, "--kubeconfig", kc, "-n", "keyed")
		assert.Regexp(t, `Deployment keyed/web\s+`+regexp.QuoteMeta("UNKNOWN (hashed with an HMAC key: pass --hmac-key-file)"), res.Stdout, "no guess after the rotation either")
	})

	t.Run("RBAC", func(t *testing.T) {
		// Exactly what docs/status.md asks for; the cluster serves no
		// Argo Rollouts.
		grant(t, cs, "plain", "reader", []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"pods", "events"}, Verbs: []string{"list"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets", "replicasets"}, Verbs: []string{"list"}},
			{APIGroups: []string{"batch"}, Resources: []string{"cronjobs"}, Verbs: []string{"list"}},
		})
		_, readerCfg := userClient(ctx, t, cp, "plain", "reader")
		readerKC := filepath.Join(t.TempDir(), "reader.kubeconfig")
		require.NoError(t, controlplane.WriteKubeconfig(readerCfg, readerKC))
		res := run(nil, "--kubeconfig", readerKC, "-n", "plain")
		assert.Equal(t, 0, res.ExitCode, res.Stderr)
		assert.Empty(t, res.Stderr)
		assert.Regexp(t, `CronJob plain/nightly\s+STALE`, res.Stdout)

		grantAllButSecrets(t, cs, "plain", "dev")
		_, devCfg := userClient(ctx, t, cp, "plain", "dev")
		devKC := filepath.Join(t.TempDir(), "dev.kubeconfig")
		require.NoError(t, controlplane.WriteKubeconfig(devCfg, devKC))
		for _, args := range [][]string{{}, {"--json"}} {
			res := run(nil, append([]string{"--kubeconfig", devKC, "-n", "plain"}, args...)...)
			assert.Equal(t, 1, res.ExitCode, res.Stderr)
			assert.Contains(t, res.Stdout, "nightly", "the report is printed")
			assert.Contains(t, res.Stderr, `CronJob plain/nightly: reading Secret plain/creds: secrets "creds" is forbidden`)
			assert.NotContains(t, res.Stderr, "Rollouts", "not served here: nothing to refuse")
		}
		res = run(nil, "--kubeconfig", devKC, "-n", "plain")
		assert.Regexp(t, `CronJob plain/nightly\s+`+regexp.QuoteMeta("UNKNOWN (cannot read Secret/creds)"), res.Stdout)
		assert.Contains(t, res.Stdout, "2 unknown (a consumed config you may not read)")

		for _, args := range [][]string{{"-n", "keyed"}, {"-A"}, {"-A", "--json"}} {
			res := run(nil, append([]string{"--kubeconfig", devKC}, args...)...)
			assert.Equal(t, 1, res.ExitCode, "%s: %s", args, res.Stderr)
			assert.Empty(t, res.Stdout, args)
			assert.Contains(t, res.Stderr, `cannot list resource "deployments"`, args)
			assert.Contains(t, res.Stderr, `cannot list resource "cronjobs"`, args)
			// -A lists cluster-wide, which a Role never allows: say what
			// the user can do instead.
			if args[0] == "-A" {
				assert.Contains(t, res.Stderr, "-A lists every namespace at once, which takes a ClusterRole; with a Role, name its namespace: -n NAMESPACE", args)
			} else {
				assert.NotContains(t, res.Stderr, "-A lists", args)
			}
		}
	})

	t.Run("paused Deployment", func(t *testing.T) {
		// Paused, then its template changed (kubectl rollout pause, then
		// an edit): nothing rolls until it is resumed, and status says so.
		_, err := kubetest.Edit(ctx, cs.AppsV1().Deployments("keyed"), "web", "", func(d *appsv1.Deployment) {
			d.Spec.Paused = true
			d.Spec.Template.Labels["edited"] = "yes"
		})
		require.NoError(t, err)
		var res testtools.Result
		eventually(t, "the Deployment controller observes the paused Deployment", func() bool {
			res = run([]string{"CONFIGHASH_HMAC_KEY=k3y"}, "--kubeconfig", kc, "-n", "keyed")
			return !strings.Contains(res.Stdout, "not yet observed")
		})
		assert.Regexp(t, `Deployment keyed/web\s+STALE \(render-hash-mismatch\)\s+\S+\s+-\s+paused 0/1 updated, 0 available, 1 pending\s+1/1\s`, res.Stdout)
		assert.Contains(t, res.Stdout, "rollout: paused (kubectl rollout resume to roll): ")
		// Its pod runs the template before the edit: a paused Deployment
		// makes no ReplicaSet for the new one. Before, status counted the
		// pods of its last ReplicaSet as current: 0/1.
		assert.Contains(t, res.Stdout, "1 pod runs an older template")
		ws := statustest.Workloads(t, run([]string{"CONFIGHASH_HMAC_KEY=k3y"}, "--kubeconfig", kc, "-n", "keyed", "--json").Stdout)
		assert.True(t, ws["Deployment/web"].Rollout.Paused)
		assert.False(t, ws["Deployment/web"].Rollout.Done)
		assert.Equal(t, 1, ws["Deployment/web"].Rollout.StalePods)

		// Resumed: the new ReplicaSet's pod runs the current template, the
		// old one's an older one, until it is gone.
		_, err = kubetest.Edit(ctx, cs.AppsV1().Deployments("keyed"), "web", "", func(d *appsv1.Deployment) { d.Spec.Paused = false })
		require.NoError(t, err)
		eventually(t, "the resumed Deployment's new ReplicaSet has its pod", func() bool {
			w := statustest.Workloads(t, run([]string{"CONFIGHASH_HMAC_KEY=k3y"}, "--kubeconfig", kc, "-n", "keyed", "--json").Stdout)["Deployment/web"]
			return w.Rollout.Updated == 1 && w.Rollout.Pods == 2
		})
		w := statustest.Workloads(t, run([]string{"CONFIGHASH_HMAC_KEY=k3y"}, "--kubeconfig", kc, "-n", "keyed", "--json").Stdout)["Deployment/web"]
		assert.Equal(t, 1, w.Rollout.StalePods, "the old ReplicaSet's pod")
	})

	t.Run("suspended CronJob", func(t *testing.T) {
		_, err := kubetest.Edit(ctx, cs.BatchV1().CronJobs("keyed"), "nightly", "", func(c *batchv1.CronJob) {
			suspend := true
			c.Spec.Suspend = &suspend
		})
		require.NoError(t, err)
		res := run([]string{"CONFIGHASH_HMAC_KEY=k3y"}, "--kubeconfig", kc, "-n", "keyed")
		assert.Contains(t, res.Stdout, "CronJob keyed/nightly consumes Secret/creds (keys password)\n  rollout: suspended: no Job runs until it is resumed\n")
	})

	t.Run("OnDelete StatefulSet", func(t *testing.T) {
		// Its pods take a new template only when deleted: status says so
		// rather than "in progress" for ever.
		const namespace = "ondelete"
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
		require.NoError(t, err)
		stream := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {LOG_LEVEL: info}\n---\n" +
			kubetest.Workload{Kind: "StatefulSet", Name: "db", Replicas: 1, Spec: []string{"serviceName: db", "updateStrategy: {type: OnDelete}"},
				Env: []string{kubetest.EnvKey("app", "LOG_LEVEL")}}.YAML()
		rendered, _, err := postrenderer.Process([]byte(stream), inject.Options{DefaultNamespace: namespace})
		require.NoError(t, err)
		require.NoError(t, kubetest.Apply(ctx, dyn, mapper, bytes.NewReader(rendered), kubetest.ApplyOptions{Namespace: namespace, FieldManager: "helm"}))
		eventually(t, "the StatefulSet controller creates db-0", func() bool {
			pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
			return err == nil && len(pods.Items) == 1
		})
		_, err = kubetest.Edit(ctx, cs.AppsV1().StatefulSets(namespace), "db", "", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Labels["edited"] = "yes"
		})
		require.NoError(t, err)
		var res testtools.Result
		eventually(t, "the StatefulSet controller sees the new revision", func() bool {
			res = run(nil, "--kubeconfig", kc, "-n", namespace)
			return strings.Contains(res.Stdout, "1 pod runs an older template")
		})
		assert.Regexp(t, `StatefulSet ondelete/db\s+current\s+\S+\s+-\s+OnDelete 0/1 updated`, res.Stdout)
		assert.Contains(t, res.Stdout, "rollout: OnDelete (its pods take the new template when deleted): ")
	})

	t.Run("Secret deleted", func(t *testing.T) {
		require.NoError(t, cs.CoreV1().Secrets("plain").Delete(ctx, "creds", metav1.DeleteOptions{}))
		res := run(nil, "--kubeconfig", kc, "-n", "plain")
		assert.Equal(t, 0, res.ExitCode, res.Stderr)
		assert.Regexp(t, `CronJob plain/nightly\s+`+regexp.QuoteMeta("BLOCKED (missing Secret/creds)"), res.Stdout)
		assert.Contains(t, res.Stdout, "Secret/creds (keys password, MISSING)")
	})
}
