package controller_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/internal/testing/vectors"
)

// TestVectorsThroughTheRealCache is hash parity on the real API server: the
// vector objects are created, read back through the controller's cache
// (transform included), and hashed; every vector gives its value.
func TestVectorsThroughTheRealCache(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	vectors.Each(t, func(t *testing.T, v vectors.Vector) {
		if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v.Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		objs := apiServerObjects(t, v)
		for _, obj := range objs {
			obj.SetResourceVersion("")
			obj.SetUID("")
			c, err := client.New(e.cfg, client.Options{})
			require.NoError(t, err)
			require.NoError(t, c.Create(ctx, obj))
			t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
		}
		opts := controller.CacheOptions(controller.Options{Namespaces: []string{v.Namespace}})
		c, err := cache.New(e.cfg, opts)
		require.NoError(t, err)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { _ = c.Start(cctx) }()
		var contents []hashing.Content
		for _, obj := range objs {
			got := obj.DeepCopyObject().(client.Object)
			eventually(t, "the cache to hold "+obj.GetName(), func(ctx context.Context) (bool, error) {
				return c.Get(ctx, client.ObjectKeyFromObject(obj), got) == nil, nil
			})
			if s, ok := got.(*corev1.Secret); ok {
				assert.Nil(t, s.Data, "the cached Secret holds digests only, no value")
			}
			content, err := controller.ContentOf(got)
			require.NoError(t, err)
			contents = append(contents, content)
		}
		assert.Equal(t, v.Expected, v.Compute(contents))
	})
}

// TestInstallManifests applies config/namespaced and config/ (built with
// kustomize) to the real API server and runs the controller with exactly
// the ServiceAccount's permissions (impersonated): it must work, and the
// namespaced variant must hold no cluster-wide permission.
func TestInstallManifests(t *testing.T) {
	kustomize := testtools.Tool(t, "kustomize")
	root := testtools.RepoRoot(t)
	sa := rest.ImpersonationConfig{
		UserName: "system:serviceaccount:confighash-system:confighash-controller",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:confighash-system", "system:authenticated"},
	}
	for _, variant := range []string{"namespaced", "cluster"} {
		t.Run(variant, func(t *testing.T) {
			e := newEnv(t)
			dir := root + "/config"
			if variant == "namespaced" {
				dir += "/namespaced"
			}
			res := testtools.Run(t, "", nil, nil, kustomize, "build", dir)
			require.Equal(t, 0, res.ExitCode, res.Stderr)
			manifests := regexp.MustCompile(`(?m)^(\s+namespace: )apps$`).ReplaceAllString(res.Stdout, "${1}"+e.ns)
			require.NoError(t, e.apply(manifests, "kubectl"))

			can := func(verb, resource, ns string) bool {
				r, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authzv1.SubjectAccessReview{
					Spec: authzv1.SubjectAccessReviewSpec{User: sa.UserName, Groups: sa.Groups,
						ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Resource: resource, Namespace: ns}},
				}, metav1.CreateOptions{})
				require.NoError(t, err)
				return r.Status.Allowed
			}
			assert.True(t, can("watch", "secrets", e.ns))
			assert.False(t, can("get", "secrets", e.ns), "secrets are listed and watched, never read one by one")
			assert.False(t, can("update", "configmaps", e.ns), "configs are never written")
			if variant == "namespaced" {
				assert.False(t, can("list", "configmaps", ""), "no cluster-wide permission in the namespaced variant")
			}

			cfg := rest.CopyConfig(e.cfg)
			cfg.Impersonate = sa
			opts := e.testOptions()
			opts.RESTConfig = cfg
			opts.LeaderElect, opts.LeaderElectionNamespace = true, "confighash-system"
			opts.LeaderElectionID = "confighash-" + variant
			if variant == "cluster" {
				opts.Namespaces = nil
			}
			s := &scenario{env: e, kind: "Deployment"}
			e.createSecret("db-creds", map[string]string{"password": "pw-1"})
			s.rendered = render(t, e.stream(defaultApp("Deployment")))
			s.ctrl = e.start(opts)
			require.NoError(t, e.apply(s.rendered, "kubectl"))
			inNS := func(result string) func(controller.Outcome) bool {
				return func(o controller.Outcome) bool { return o.Request.Namespace == e.ns && is("Deployment", result)(o) }
			}
			s.ctrl.obs.waitFor(t, 0, "in sync", inNS("in_sync"))
			mark := s.ctrl.obs.mark()
			e.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
			_, next := s.ctrl.obs.waitFor(t, mark, "rolled", inNS("rolled"))
			s.ctrl.obs.waitFor(t, next, "in sync", inNS("in_sync"))
			assert.Equal(t, 1, s.rollouts())
			e.waitEvent(workloadName, controller.EventReasonConfigChanged)
			assert.Zero(t, s.ctrl.obs.count(0, func(o controller.Outcome) bool { return o.Err != nil }), "no reconcile failed")
		})
	}
}

// TestReloaderMigration: a workload annotated for Reloader (no render-time
// hash) is managed with every config external, including a ConfigMap it
// names but does not mount.
func TestReloaderMigration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for name, data := range map[string]map[string]string{"app-config": {"LOG_LEVEL": "info"}, "feature-flags": {"beta": "off"}} {
		_, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	s := &scenario{env: e, kind: "Deployment"}
	s.ctrl = e.start(e.testOptions())
	require.NoError(t, e.apply(kubetest.Workload{Name: workloadName, Namespace: e.ns, Replicas: 1,
		Annotations: map[string]string{"reloader.stakater.com/auto": "true", "configmap.reloader.stakater.com/reload": "feature-flags"},
		EnvFrom:     []string{"{configMapRef: {name: app-config}}"}}.YAML(), "helm"))
	s.ctrl.obs.waitFor(t, 0, "in sync", is("Deployment", "in_sync"))
	assert.Contains(t, e.deployment(workloadName).Annotations["confighash.dev/external-baseline"], "ConfigMap/feature-flags=")
	for i, name := range []string{"feature-flags", "app-config"} {
		mark := s.ctrl.obs.mark()
		e.editConfigMap(name, func(cm *corev1.ConfigMap) {
			for k := range cm.Data {
				cm.Data[k] = "changed"
			}
		})
		s.expectRoll(mark)
		assert.Equal(t, i+1, s.rollouts(), "after editing %s", name)
	}
}

// TestCronJob: the pod template of a CronJob is at
// spec.jobTemplate.spec.template; the next Job gets the new config.
func TestCronJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.start(e.testOptions())
	manifest := kubetest.Workload{Kind: "CronJob", Name: "nightly", Namespace: e.ns, EnvFrom: []string{"{configMapRef: {name: job-config}}"}}
	require.NoError(t, e.apply(render(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: job-config, namespace: %s}\ndata: {MODE: full}\n---\n", e.ns)+manifest.YAML()), "kubectl"))
	cron := func(o controller.Outcome) bool { return o.Request.Kind == "CronJob" && o.Request.Name == "nightly" }
	r.obs.waitFor(t, 0, "in sync", func(o controller.Outcome) bool { return cron(o) && o.Result == "in_sync" })
	mark := r.obs.mark()
	e.editConfigMap("job-config", func(cm *corev1.ConfigMap) { cm.Data["MODE"] = "incremental" })
	rolled, _ := r.obs.waitFor(t, mark, "rolled", func(o controller.Outcome) bool { return cron(o) && o.Result == "rolled" })
	cj, err := e.cs.BatchV1().CronJobs(e.ns).Get(context.Background(), "nightly", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, rolled.Decision.Record.ControllerHash, cj.Spec.JobTemplate.Spec.Template.Annotations["confighash.dev/controller-hash"])
}

// TestArgoRolloutsInstalledLater starts the controller (auto mode, through
// Run) on a control plane that serves no Rollouts, then installs the CRD:
// the controller sets itself up again within its recheck and rolls a
// Rollout for a config edit, with no restart of the process. Before, a
// Rollout CRD installed after the controller was never managed until
// someone restarted it. The CRD then removed, it sets up again without
// Rollouts and still rolls the Deployment it managed.
func TestArgoRolloutsInstalledLater(t *testing.T) {
	e := envOn(t, cptest.Private(t))
	opts := e.testOptions()
	opts.ArgoRolloutsRecheck = 200 * time.Millisecond
	r := e.startRun(opts)
	require.NoError(t, e.apply(render(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: %s}\ndata: {A: a}\n---\n", e.ns)+
		kubetest.Workload{APIVersion: "apps/v1", Kind: "Deployment", Name: "before", Namespace: e.ns, Replicas: 1,
			EnvFrom: []string{"{configMapRef: {name: other}}"}}.YAML()), "kubectl"))
	r.obs.waitFor(t, 0, "the Deployment in sync before the CRD", func(o controller.Outcome) bool {
		return o.Request.Kind == "Deployment" && o.Result == "in_sync"
	})

	require.NoError(t, e.apply(kubetest.RolloutCRD, "kubectl"))
	kubetest.WaitDiscovered(t, e.mapper, controller.RolloutGVK)
	rolloutRollsForAnEdit(t, e, r)
	assert.Contains(t, r.logs.String(), "Argo Rollouts' CRD is served now")

	// The Deployment managed before is still managed, by the new manager.
	deployment := func(o controller.Outcome) bool { return o.Request.Kind == "Deployment" && o.Result == "rolled" }
	mark := r.obs.mark()
	e.editConfigMap("other", func(cm *corev1.ConfigMap) { cm.Data["A"] = "b" })
	r.obs.waitFor(t, mark, "the Deployment rolled after the set-up", deployment)

	// Argo Rollouts removed: the controller sets up again without them,
	// and goes on managing the Deployment.
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	require.NoError(t, e.dyn.Resource(crds).Delete(context.Background(), "rollouts.argoproj.io", metav1.DeleteOptions{}))
	kubetest.EventuallyTrue(t, time.Minute, 100*time.Millisecond, "the set-up without Rollouts", func() bool {
		return strings.Contains(r.logs.String(), "Argo Rollouts' CRD is no longer served")
	})
	mark = r.obs.mark()
	e.editConfigMap("other", func(cm *corev1.ConfigMap) { cm.Data["A"] = "c" })
	r.obs.waitFor(t, mark, "the Deployment rolled after Argo Rollouts went", deployment)
}

// TestArgoRollout serves a Rollout CRD (the schema-less shape of Argo's),
// and checks that the controller finds it by discovery and patches its pod
// template.
func TestArgoRollout(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.apply(kubetest.RolloutCRD, "kubectl"))
	kubetest.WaitDiscovered(t, e.mapper, controller.RolloutGVK)
	r := e.start(e.testOptions())
	rolloutRollsForAnEdit(t, e, r)
}

// rolloutRollsForAnEdit applies a rendered Rollout that reads a ConfigMap,
// waits for the controller to find it in sync, edits the ConfigMap and
// checks the controller's roll reached the Rollout's pod template.
func rolloutRollsForAnEdit(t *testing.T, e *env, r *running) {
	t.Helper()
	manifest := kubetest.Workload{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: workloadName, Namespace: e.ns, Replicas: 1,
		Spec: []string{"strategy: {canary: {}}"}, EnvFrom: []string{"{configMapRef: {name: app-config}}"}}
	require.NoError(t, e.apply(render(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-config, namespace: %s}\ndata: {LOG_LEVEL: info}\n---\n", e.ns)+manifest.YAML()), "argocd-controller"))
	rollout := func(result string) func(controller.Outcome) bool {
		return func(o controller.Outcome) bool { return o.Request.Kind == "Rollout" && o.Result == result }
	}
	r.obs.waitFor(t, 0, "the Rollout in sync", rollout("in_sync"))
	mark := r.obs.mark()
	e.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
	rolled, _ := r.obs.waitFor(t, mark, "the Rollout rolled", rollout("rolled"))
	gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}
	u, err := e.dyn.Resource(gvr).Namespace(e.ns).Get(context.Background(), workloadName, metav1.GetOptions{})
	require.NoError(t, err)
	got, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", "confighash.dev/controller-hash")
	assert.Equal(t, rolled.Decision.Record.ControllerHash, got)
	assert.True(t, strings.HasPrefix(got, "v1-sha256:"))
}
