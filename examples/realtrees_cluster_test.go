package examples_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/confighash/confighash/internal/status"
	"github.com/confighash/confighash/internal/testing/cptest"
)

// treeEdit is an out-of-band edit of a live config of a tree. kept: the
// render does not hold the key (a Secret the project fills at run time, a
// key added to a ConfigMap the render leaves empty), so a re-apply of the
// render leaves the edit in place; otherwise the forced apply writes the
// render's value back.
type treeEdit struct {
	clusterEdit
	kept bool
}

// clusterTree is one row of realTrees applied to the control plane. Names
// of configs in edits are the final names without kustomize's hash suffix;
// workloads are Kind/name.
type clusterTree struct {
	tree string // the realTrees row
	// prefix names the test's namespace; namespace is the tree's
	// namespace: in the kustomization built, set to the test's ("" when
	// the tree names none: the render is applied into it, as with
	// kubectl apply -n).
	prefix, namespace string
	// secrets are the configs a user creates before applying.
	secrets map[string]map[string]string
	// renamed is how many configs the row's changes make kustomize
	// rename (a suffixed generator's input changed).
	renamed int
	unread  *clusterEdit
	edits   []treeEdit
	// agree are workloads whose controller record, once a re-apply of
	// the render wrote back every edit they read, is the render's hash.
	agree []string
}

var clusterTrees = []clusterTree{
	{
		// namePrefix, an unsuffixed configMapGenerator mounted whole, and
		// the webhook cert Secret the render holds empty: kueue's own
		// cert manager writes it at run time, which is an edit the
		// controller rolls for and a GitOps re-apply keeps.
		tree: "kueue config/default", prefix: "tree-kueue", namespace: "kueue-system",
		edits: []treeEdit{
			{clusterEdit{"Secret", "kueue-webhook-server-cert", "tls.crt", "a certificate", []string{"Deployment/kueue-controller-manager"}}, true},
			{clusterEdit{"ConfigMap", "kueue-manager-config", "controller_manager_config.yaml", "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n",
				[]string{"Deployment/kueue-controller-manager"}}, false},
		},
	},
	{
		// namePrefix, nameSuffix, a suffixed secretGenerator read by
		// key, a suffixed configMapGenerator read whole (envFrom), an
		// unsuffixed one mounted whole.
		tree: "katib installs/katib-external-db under an overlay", prefix: "tree-katib", namespace: "ml",
		renamed: 2,
		unread:  &clusterEdit{"Secret", "eu-katib-mysql-secrets-v2", "UNREAD", "nobody", nil},
		edits: []treeEdit{
			{clusterEdit{"Secret", "eu-katib-mysql-secrets-v2", "DB_PASSWORD", "third", []string{"Deployment/eu-katib-db-manager-v2"}}, false},
			{clusterEdit{"ConfigMap", "eu-ui-env-v2", "THEME", "blue", []string{"Deployment/eu-katib-ui-v2"}}, false},
		},
		agree: []string{"Deployment/eu-katib-db-manager-v2", "Deployment/eu-katib-ui-v2"},
	},
	{
		// Eight workloads (two StatefulSets) reading argocd-cmd-params-cm
		// and argocd-cm key by key, and the Redis password Secret the user
		// creates. No namespace in the tree. The keys the edits add are
		// settings the render does not hold: a re-apply keeps them. (The redis-ha haproxy keeps
		// one old ReplicaSet, revisionHistoryLimit: 1: no edit here rolls
		// it a second time.)
		tree: "argo-cd ha/namespace-install", prefix: "tree-argocd",
		secrets: map[string]map[string]string{"argocd-redis": {"auth": "first"}},
		unread:  &clusterEdit{"ConfigMap", "argocd-cmd-params-cm", "example.unread", "true", nil},
		edits: []treeEdit{
			{clusterEdit{"ConfigMap", "argocd-cmd-params-cm", "redis.server", "redis.example:6379", []string{
				"Deployment/argocd-repo-server", "Deployment/argocd-server", "StatefulSet/argocd-application-controller",
			}}, false},
			{clusterEdit{"ConfigMap", "argocd-cm", "timeout.reconciliation", "300s", []string{
				"Deployment/argocd-repo-server", "StatefulSet/argocd-application-controller",
			}}, true},
			{clusterEdit{"ConfigMap", "argocd-cmd-params-cm", "dexserver.log.level", "debug", []string{"Deployment/argocd-dex-server"}}, true},
		},
	},
}

// TestRealTreesOnCluster renders rows of realTrees with confighash, as
// TestRealTrees does, with the tree's namespace set to one of its own on
// the shared control plane, applies the ConfigMaps, Secrets and workloads of
// each render there with server-side apply (as Argo CD and Flux do; the
// trees' CRDs, webhooks, APIServices and cluster-wide RBAC would outlive the
// namespace, and their webhooks would answer for the other tests), with
// bin/confighash-controller watching it, and checks, counting pod templates
// and the controller's rolls:
//   - the first apply rolls nothing, and kubectl confighash status reports
//     every workload current;
//   - each change of the row (a generator's input) re-rendered and applied
//     rolls exactly the workloads whose hash it moves, once; a config
//     kustomize renamed stays in the cluster; the controller rolls
//     nothing, and status stays current;
//   - an edit of a key no workload reads rolls nothing, nor does an edit
//     of a config kustomize renamed away, nor its prune;
//   - out-of-band edits of consumed keys with the controller stopped:
//     status says STALE for exactly their readers; the controller started
//     again rolls each reader once; the same keys edited again with the
//     controller running roll each reader once more;
//   - the render re-applied rolls once more exactly the readers of the
//     edits it writes back, applied again it rolls nothing, and the
//     controller's record of a workload whose edits were all written back
//     is the render's hash;
//   - a change in git after that (the row's first change undone) rolls
//     exactly the workloads whose hash it moves, once, even those that
//     read content the render does not hold (kueue's cert, keys added to
//     argocd-cm): the controller rolls nothing on top.
func TestRealTreesOnCluster(t *testing.T) {
	cptest.Require(t)
	t.Parallel()
	for _, ct := range clusterTrees {
		t.Run(ct.tree, func(t *testing.T) {
			t.Parallel()
			i := slices.IndexFunc(realTrees, func(r realTree) bool { return r.name == ct.tree })
			require.GreaterOrEqual(t, i, 0, "no row %s in realTrees", ct.tree)
			checkTreeOnCluster(t, ct, realTrees[i])
		})
	}
}

// checkTreeOnCluster runs a row as TestRealTreesOnCluster says.
func checkTreeOnCluster(t *testing.T, ct clusterTree, tc realTree) {
	c := newCluster(t, ct.prefix)
	dir := moduleTree(t, tc.module, tc.root, tc.overlay)
	build := filepath.Join(dir, tc.build)
	if ct.namespace != "" {
		edit(t, filepath.Join(build, "kustomization.yaml"), "namespace: "+ct.namespace, "namespace: "+c.namespace)
	}
	addConfighash(t, build)
	render := func() string {
		out, _ := realBuild(t, build, tc.flags, true)
		return treeInputs(out)
	}
	for name, data := range ct.secrets {
		c.createConfig(t, "Secret", name, data)
	}
	// A window shorter than an apply rolls twice (docs/controller.md): the
	// controller acts on the new configs before the new templates land.
	// argo-cd's HA install applied on a loaded machine took over 2 s.
	window := []string{"--coalesce-window", "5s"}
	ctrl := startController(t, "controller", c.namespace, window...)

	out := render()
	c.apply(t, out)
	last := statusOf(t, c.namespace)
	workloads := slices.Sorted(maps.Keys(last))
	assert.Equal(t, slices.Sorted(slices.Values(kindNames(tc.hashed))), workloads, "the workloads the controller manages")
	assertCurrent(t, "after the first apply", last)
	ctrl.settledAll(t, c.release, workloads)
	counts := c.rollCounts(t, workloads)
	for id, n := range counts {
		assert.Equal(t, 1, n, "%s: pod templates after the first apply", id)
	}
	assert.Zero(t, ctrl.rolls(), "the controller rolled after the first apply")

	// Each change in git, re-rendered and applied.
	var renamed []string // the configs kustomize renamed, as they were
	for _, ch := range tc.changes {
		what := ch.file + ": " + ch.new
		edit(t, filepath.Join(dir, ch.file), ch.old, ch.new)
		next := render()
		c.apply(t, next)
		after := c.rollCounts(t, workloads)
		ctrl.settledAll(t, c.release, workloads)
		st := statusOf(t, c.namespace)
		assertCurrent(t, what, st)
		var moved []string
		for id, w := range st {
			if w.RenderHash != last[id].RenderHash {
				moved = append(moved, id)
			}
		}
		assert.ElementsMatch(t, kindNames(ch.moved), moved, "%s: the workloads whose render-time hash moved", what)
		assertReadersRolled(t, what, counts, after, kindNames(ch.moved))
		assert.Equal(t, after, c.rollCounts(t, workloads), "%s: rollouts after the controller saw it", what)
		assert.Zero(t, ctrl.rolls(), "%s: the controller rolled", what)
		for _, ref := range configRefs(t, out) {
			if !slices.Contains(configRefs(t, next), ref) {
				renamed = append(renamed, ref)
				kind, name, _ := strings.Cut(ref, "/")
				assert.True(t, c.configExists(t, kind, name), "%s: %s renamed by kustomize is gone from the cluster before any prune", what, ref)
			}
		}
		last, counts, out = st, after, next
	}
	assert.Len(t, renamed, ct.renamed, "configs kustomize renamed: %v", renamed)

	// Keys no workload reads: the row's, and one of each config kustomize
	// renamed away (left in the cluster, read by nobody now).
	var unread []clusterEdit
	if ct.unread != nil {
		e := *ct.unread
		e.name = liveName(t, out, e.kind, e.name)
		unread = append(unread, e)
	}
	for _, ref := range renamed {
		kind, name, _ := strings.Cut(ref, "/")
		unread = append(unread, clusterEdit{kind: kind, name: name, key: "edited", value: "after the rename"})
	}
	for _, e := range unread {
		events := ctrl.metric("confighash_config_events_total", `change="content"`)
		c.editConfig(t, e)
		ctrl.waitFor(t, "the edit seen", func(v float64) bool { return v > events }, "confighash_config_events_total", `change="content"`)
		ctrl.settledAll(t, c.release, workloads)
		assert.Equal(t, counts, c.rollCounts(t, workloads), "rollouts after an edit of %s %s key %s, which no workload reads", e.kind, e.name, e.key)
		assert.Zero(t, ctrl.rolls(), "the controller rolled for %s %s key %s, which no workload reads", e.kind, e.name, e.key)
	}

	// The configs kustomize renamed away pruned: nothing reads them.
	for _, ref := range renamed {
		kind, name, _ := strings.Cut(ref, "/")
		events := ctrl.metric("confighash_config_events_total", `change="deleted"`)
		c.deleteConfig(t, kind, name)
		ctrl.waitFor(t, "the prune seen", func(v float64) bool { return v > events }, "confighash_config_events_total", `change="deleted"`)
		ctrl.settledAll(t, c.release, workloads)
		assert.Equal(t, counts, c.rollCounts(t, workloads), "rollouts after %s, renamed away, was pruned", ref)
		assert.Zero(t, ctrl.rolls(), "the controller rolled when %s, renamed away, was pruned", ref)
		assert.Zero(t, ctrl.metric("confighash_workloads_missing_config"), "held back for a missing config after %s was pruned", ref)
	}
	if len(renamed) > 0 {
		assertCurrent(t, "after the prune", statusOf(t, c.namespace))
	}

	// Out-of-band edits while no controller runs: status says STALE; the
	// controller started again rolls each reader once.
	ctrl.Signal(syscall.SIGTERM)
	readers, rewritten := c.treeEdits(t, out, ct.edits, "")
	assertStale(t, c.namespace, readers, "controller stopped")
	ctrl = startController(t, "controller-again", c.namespace, window...)
	edited := ctrl.rolledReaders(t, c, "edits while the controller was stopped", workloads, counts, readers)

	// The same keys edited again with the controller running (a second
	// value; a renewed certificate): each reader rolls once more, edits
	// of two configs it reads within a window in one roll.
	c.treeEdits(t, out, ct.edits, "again: ")
	reedited := ctrl.rolledReaders(t, c, "edits with the controller running", workloads, edited, readers)

	// GitOps re-applies the render: the edits it writes back are one more
	// roll of their readers, the controller's; the next re-apply is none.
	c.apply(t, out)
	ctrl.waitRolls(t, "the written-back edits rolled", float64(2*len(readers)+len(rewritten)))
	resynced := c.rollCounts(t, workloads)
	ctrl.settledAll(t, c.release, workloads)
	assertReadersRolled(t, "the render re-applied over the edits", reedited, resynced, rewritten)
	c.apply(t, out)
	ctrl.settledAll(t, c.release, workloads)
	assert.Equal(t, resynced, c.rollCounts(t, workloads), "rollouts after the same render applied again")
	assert.InDelta(t, 2*len(readers)+len(rewritten), ctrl.rolls(), 0, "the controller's rolls since it started again")
	final := statusOf(t, c.namespace)
	assertCurrent(t, "after the render re-applied", final)
	for _, id := range ct.agree {
		assert.Equal(t, final[id].RenderHash, final[id].ControllerHash, "%s: the controller's record and the render's hash", id)
	}

	// A change in git once the edits settled (the row's first change
	// undone): the render rolls the workloads whose hash it moves, once;
	// the controller rolls nothing more.
	ch := tc.changes[0]
	edit(t, filepath.Join(dir, ch.file), ch.new, ch.old)
	rolls := ctrl.rolls()
	c.apply(t, render())
	changed := c.rollCounts(t, workloads)
	ctrl.settledAll(t, c.release, workloads)
	assertReadersRolled(t, "a change in git after the edits", resynced, changed, kindNames(ch.moved))
	assert.Equal(t, changed, c.rollCounts(t, workloads), "a change in git after the edits: rollouts after the controller saw it")
	assert.InDelta(t, rolls, ctrl.rolls(), 0, "a change in git after the edits: the controller rolled")
}

// treeEdits makes the row's out-of-band edits, each value after prefix, and
// returns the readers, keyed to the configs edited that each reads, and
// the readers of an edit a re-apply of the render writes back.
func (c *cluster) treeEdits(t *testing.T, render string, edits []treeEdit, prefix string) (readers map[string][]string, rewritten []string) {
	t.Helper()
	readers = map[string][]string{}
	for _, te := range edits {
		e := te.clusterEdit
		e.name = liveName(t, render, e.kind, e.name)
		e.value = prefix + e.value
		c.editConfig(t, e)
		for _, id := range e.readers {
			readers[id] = append(readers[id], e.kind+"/"+e.name)
			if !te.kept && !slices.Contains(rewritten, id) {
				rewritten = append(rewritten, id)
			}
		}
	}
	return readers, rewritten
}

// rolledReaders waits until the controller made a roll per reader beyond
// the ones it had made, and checks that each reader got one more pod
// template and the others none, that the controller rolled nothing more
// once settled, and that status reports every workload current, each
// reader with the live hash as the controller's record. It returns the
// pod templates per workload.
func (p *controllerProc) rolledReaders(t *testing.T, c *cluster, what string, workloads []string, before map[string]int, readers map[string][]string) map[string]int {
	t.Helper()
	want := p.rolls() + float64(len(readers))
	p.waitRolls(t, what+": the readers rolled", want)
	after := c.rollCounts(t, workloads)
	p.settledAll(t, c.release, workloads)
	assert.InDelta(t, want, p.rolls(), 0, "%s: the controller's rolls", what)
	assertReadersRolled(t, what, before, after, slices.Collect(maps.Keys(readers)))
	assert.Equal(t, after, c.rollCounts(t, workloads), "%s: rollouts once the controller settled", what)
	for id, w := range statusOf(t, c.namespace) {
		assert.Equal(t, status.ConfigCurrent, w.Config, "%s, %s: %s %v", what, id, w.Reason, w.Changed)
		if _, ok := readers[id]; ok {
			assert.Equal(t, w.LiveHash, w.ControllerHash, "%s, %s: the controller's record is the live hash", what, id)
		}
	}
	return after
}

// assertCurrent fails unless status reports every workload current, with a
// render-time hash.
func assertCurrent(t *testing.T, when string, workloads map[string]status.Workload) {
	t.Helper()
	for id, w := range workloads {
		assert.Equal(t, status.ConfigCurrent, w.Config, "%s, %s: %s %v", when, id, w.Reason, w.Changed)
		assert.NotEmpty(t, w.RenderHash, "%s, %s: no render-time hash", when, id)
	}
}

// kindNames turns realTrees' Kind/namespace/name into status's Kind/name.
func kindNames(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		kind, rest, _ := strings.Cut(id, "/")
		_, name, _ := strings.Cut(rest, "/")
		out = append(out, kind+"/"+name)
	}
	return out
}

// configRefs returns the ConfigMaps and Secrets of a render as Kind/name.
func configRefs(t *testing.T, stream string) []string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(stream))
	require.NoError(t, err)
	var out []string
	for _, n := range nodes {
		if k := n.GetKind(); k == "ConfigMap" || k == "Secret" {
			out = append(out, k+"/"+n.GetName())
		}
	}
	return out
}

// liveName is the name of the config of a render named name, or name with
// kustomize's hash suffix.
func liveName(t *testing.T, stream, kind, name string) string {
	t.Helper()
	for _, ref := range configRefs(t, stream) {
		k, n, _ := strings.Cut(ref, "/")
		if k == kind && (n == name || hashSuffixed(n, name+"-0000000000")) {
			return n
		}
	}
	t.Fatalf("no %s %s in the render", kind, name)
	return ""
}

// configExists tells whether the ConfigMap or Secret is in the cluster.
func (c *cluster) configExists(t *testing.T, kind, name string) bool {
	t.Helper()
	var err error
	if kind == "Secret" {
		_, err = c.client.CoreV1().Secrets(c.namespace).Get(t.Context(), name, metav1.GetOptions{})
	} else {
		_, err = c.client.CoreV1().ConfigMaps(c.namespace).Get(t.Context(), name, metav1.GetOptions{})
	}
	return err == nil
}

// createConfig creates a ConfigMap or Secret with data, as a user does
// before applying a render that reads it.
func (c *cluster) createConfig(t *testing.T, kind, name string, data map[string]string) {
	t.Helper()
	meta := metav1.ObjectMeta{Name: name}
	var err error
	if kind == "Secret" {
		_, err = c.client.CoreV1().Secrets(c.namespace).Create(t.Context(), &corev1.Secret{ObjectMeta: meta, StringData: data}, metav1.CreateOptions{})
	} else {
		_, err = c.client.CoreV1().ConfigMaps(c.namespace).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: meta, Data: data}, metav1.CreateOptions{})
	}
	require.NoError(t, err)
}

// deleteConfig deletes a ConfigMap or Secret, as a prune does.
func (c *cluster) deleteConfig(t *testing.T, kind, name string) {
	t.Helper()
	var err error
	if kind == "Secret" {
		err = c.client.CoreV1().Secrets(c.namespace).Delete(t.Context(), name, metav1.DeleteOptions{})
	} else {
		err = c.client.CoreV1().ConfigMaps(c.namespace).Delete(t.Context(), name, metav1.DeleteOptions{})
	}
	require.NoError(t, err)
}
