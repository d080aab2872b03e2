package controller_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
)

// Random histories of ordinary actions against the controller on the local
// control plane: a render of a few ConfigMaps, Secrets and workloads reading
// them every way HASHING.md section 2 lists, applied server-side, then
// random steps (out-of-band edits, deletes, creates, metadata changes,
// GitOps re-applies and new renders, bursts, and other writers of the
// workloads: the controller's baselines removed, at rest or inside a
// coalescing window, the pod template written back without the
// controller's record, replicas moved), some of them taken while the
// controller is down or ending with it stopped inside its coalescing
// window, a new controller started after them. After each step, once the
// controller has handled it, every workload must have rolled as many times
// as docs/controller.md says, judged by the test's own model of what the
// pods read: a pod template change (a render, another writer) starts the
// pods on the live content; without one, the controller rolls a workload
// once when what it consumes differs from what its pods read, unless a
// required config or key is missing (then not until it is back); content
// the pods never read (they could not start) is their first, and rolls
// nothing. Where the controller cannot tell that a template change started
// the pods on the live content, and the docs or TestDecide say it rolls
// anyway, one more roll is allowed and counted by its reason (logged per
// seed); where the docs say a restart misses a roll, none is allowed too,
// and counted. The controller writes its baselines at most maxBaselineWrites
// times per workload and step.
//
// CONFIGHASH_RANDOM_HISTORIES=a-b runs seeds a to b (one seed: a); the
// default runs historiesDefault. A failing seed prints its steps.

const (
	historiesDefault = "1-4"
	historySteps     = 12
	// historyInterval is the controllers' --min-roll-interval: short, so
	// that it bounds the baselines the controller writes again after
	// another writer removed them without slowing the histories much.
	historyInterval = time.Second
	// maxBaselineWrites bounds the controller's baseline writes per
	// workload and step.
	maxBaselineWrites = 2
	// restartBefore is the share of steps taken while the controller is
	// down, restartAfter of those that end with it stopped right after the
	// action.
	restartBefore, restartAfter = 0.12, 0.08
)

// historySeeds reads CONFIGHASH_RANDOM_HISTORIES.
func historySeeds(t *testing.T) (first, last uint64) {
	spec := os.Getenv("CONFIGHASH_RANDOM_HISTORIES")
	if spec == "" {
		spec = historiesDefault
	}
	a, b, isRange := strings.Cut(spec, "-")
	if !isRange {
		b = a
	}
	first, err1 := strconv.ParseUint(a, 10, 64)
	last, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || last < first {
		t.Fatalf("CONFIGHASH_RANDOM_HISTORIES=%q: want a seed or a range a-b", spec)
	}
	return first, last
}

func TestControllerRandomHistories(t *testing.T) {
	first, last := historySeeds(t)
	for seed := first; seed <= last; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			runHistory(t, seed)
		})
	}
}

// ---- the model ----------------------------------------------------------

// hConfig is a ConfigMap or Secret of the pool a history draws from.
type hConfig struct {
	kind hashing.Kind
	name string
}

func (c hConfig) ref() string { return string(c.kind) + "/" + c.name }

var historyPool = []hConfig{
	{hashing.KindConfigMap, "cm-a"}, {hashing.KindConfigMap, "cm-b"}, {hashing.KindConfigMap, "cm-c"},
	{hashing.KindSecret, "sec-a"}, {hashing.KindSecret, "sec-b"},
}

// The ways a pod spec reads a config (HASHING.md section 2).
const (
	wayEnvKey    = "env key"
	wayEnvFrom   = "envFrom"
	wayVolume    = "volume"
	wayItems     = "volume items"
	wayProjected = "projected"
	wayPull      = "imagePullSecrets"
)

// hRef is one reference of a pod spec to a config.
type hRef struct {
	way      string
	config   hConfig
	keys     []string // the keys named (env key, items); none: the whole config
	optional bool
}

func (r hRef) String() string {
	s := fmt.Sprintf("%s %s", r.way, r.config.ref())
	if len(r.keys) > 0 {
		s += fmt.Sprintf(" %v", r.keys)
	}
	if r.optional {
		s += " optional"
	}
	return s
}

// whole says the reference reads every key of the config.
func (r hRef) whole() bool { return len(r.keys) == 0 }

type hWorkload struct {
	kind, name string
	refs       []hRef
}

// liveConfig is a config as the API server holds it.
type liveConfig struct {
	exists bool
	data   map[string]string
	rv     string // resourceVersion of its latest write
	// created is its creation time, as the API server wrote it.
	created time.Time
	// content is the data as the hash reads it.
	content hashing.Content
	// contentRV is the resourceVersion of the latest write that changed
	// its data or its existence.
	contentRV string
}

// reads is what a workload's pods read of the configs: per config whether
// it exists, and the value of each consumed key ("" when the key is absent;
// values are never empty).
func reads(w *hWorkload, live map[string]liveConfig) map[string]string {
	out := map[string]string{}
	whole := map[string]bool{}
	for _, r := range w.refs {
		if r.whole() {
			whole[r.config.ref()] = true
		}
	}
	for _, r := range w.refs {
		ref := r.config.ref()
		lc := live[ref]
		out[ref] = strconv.FormatBool(lc.exists)
		keys := r.keys
		if whole[ref] {
			keys = slices.Collect(maps.Keys(lc.data))
		}
		for _, k := range keys {
			out[ref+" "+k] = lc.data[k]
		}
	}
	return out
}

// missing lists what keeps a workload's pods from starting: a config a
// non-optional reference names that does not exist, or a key a
// non-optional reference names that its config lacks (docs/controller.md,
// rule 1). An image pull Secret is optional.
func missing(w *hWorkload, live map[string]liveConfig) []string {
	var out []string
	for _, r := range w.refs {
		if r.optional || r.way == wayPull {
			continue
		}
		lc := live[r.config.ref()]
		if !lc.exists {
			out = append(out, r.config.ref())
			continue
		}
		for _, k := range r.keys {
			if _, ok := lc.data[k]; !ok {
				out = append(out, r.config.ref()+" key "+k)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// history is one seeded history in a namespace of its own.
type history struct {
	*env
	t     *testing.T
	seed  uint64
	r     *rand.Rand
	ctrl  *running
	watch *templateWatch

	workloads  []*hWorkload
	inRender   map[string]bool              // by Kind/name
	renderData map[string]map[string]string // content of the configs in the render
	rendered   string
	templates  map[string]map[string]any // each workload's rendered pod template
	live       map[string]liveConfig
	// previous is the content of each deleted config before its deletion.
	previous map[string]map[string]string
	// saw is what each workload's pods read (see first for pods that
	// could not start).
	saw map[string]map[string]string
	// first holds, for workloads whose pods could not start when their
	// pod template changed, the configs they lacked: what those hold when
	// they can start is their first content.
	first map[string]map[string]bool
	// hash and uses are each workload's render-time hash and uses
	// fingerprint at the last check; rolledUnder both (space-separated)
	// when the controller last rolled it, and rolledReads what it read
	// then (what the controller's record on the pod template says).
	hash, uses, rolledUnder map[string]string
	rolledReads             map[string]map[string]string
	// baseline is, per workload, what it read of its external configs when
	// it was last found in sync (what the controller's baseline holds).
	baseline map[string]map[string]string
	// reads is what each workload consumed at the last check, and
	// firstEdited marks workloads held back since their pod template
	// changed, one of whose configs in first was edited meanwhile.
	reads       map[string]map[string]string
	firstEdited map[string]bool
	// lenient marks workloads whose pod template changed while their
	// pods could not start: the controller kept the baseline of the pods
	// before, so the content that lets them start may roll them once
	// (docs: a second roll at worst, never a missed one).
	lenient map[string]bool
	// unseen marks workloads created by the first apply while their pods
	// could not start: the controller, started just before, may have
	// listed them at its start-up rather than seen them created (odd
	// seeds).
	unseen map[string]bool
	// watched says the first apply came once the controller watched.
	watched bool
	// replaced marks the workloads whose pod template another writer
	// wrote back without the controller's record in this step, awaits
	// what an outcome of the controller must show for it to have seen
	// another writer's write of this step.
	replaced map[string]bool
	awaits   map[string]func(controller.Outcome) bool

	// opts are the controllers' options; down draws the steps around
	// which the controller is stopped (a stream of its own, so that a
	// seed's actions stay what they were without restarts), restarts
	// counts them, fresh is the observer's mark at the restart in this
	// step (-1: none; see restarted).
	opts     controller.Options
	down     *rand.Rand
	restarts int
	fresh    int
	// erased holds, per workload, the baselines (annotation keys) another
	// writer took from it in this step, or since, while it was held back;
	// forgot those of them a restart made the controller lose (what they
	// said lived in the stopped controller's memory), until the pods can
	// start; missed counts by reason the rolls the docs say a restart may
	// miss, that the controller did miss.
	erased map[string]map[string]bool
	forgot map[string]map[string]bool
	missed map[string]int

	steps   []string
	counter int
	// rolls and extra count the controller's rolls, and those the docs
	// allow beyond the model (see lenient, and a render applied over more
	// than a coalescing window).
	rolls int
	extra map[string]int
	// baselineWrites counts the workloads and steps by how many baseline
	// writes the controller made.
	baselineWrites map[int]int
	// others counts the other writers' actions by kind.
	others map[string]int
}

func (h *history) chance(p float64) bool { return h.r.Float64() < p }

func (h *history) value() string {
	h.counter++
	return fmt.Sprintf("v%d-%d", h.counter, h.r.IntN(1000))
}

func pick[T any](r *rand.Rand, from []T) T { return from[r.IntN(len(from))] }

// step records what a step did, for the report of a failing seed.
func (h *history) step(format string, args ...any) {
	h.steps = append(h.steps, fmt.Sprintf(format, args...))
}

func (h *history) fatalf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("seed %d, step %d: %s\nreplay with CONFIGHASH_RANDOM_HISTORIES=%d; the steps:\n  %s",
		h.seed, len(h.steps), fmt.Sprintf(format, args...), h.seed, strings.Join(h.steps, "\n  "))
}

// ---- generating ---------------------------------------------------------

func (h *history) randomData() map[string]string {
	data := map[string]string{}
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		if len(data) == 0 || h.chance(0.6) {
			data[k] = h.value()
		}
	}
	return data
}

// knownKeys are the keys of a config as the render holds it, or as it
// lives, or k1 to k3.
func (h *history) knownKeys(c hConfig) []string {
	data := h.renderData[c.ref()]
	if !h.inRender[c.ref()] {
		data = h.live[c.ref()].data
	}
	if len(data) == 0 {
		return []string{"k1", "k2", "k3"}
	}
	return slices.Sorted(maps.Keys(data))
}

// newRef draws a reference; a key a non-optional reference names is one
// the config holds in the render (or lives with), so that the render is
// complete.
func (h *history) newRef() hRef {
	c := pick(h.r, historyPool)
	way := pick(h.r, []string{wayEnvKey, wayEnvFrom, wayVolume, wayItems, wayProjected, wayPull})
	if way == wayPull && c.kind != hashing.KindSecret {
		way = wayEnvFrom
	}
	r := hRef{way: way, config: c, optional: way == wayPull || h.chance(0.25)}
	keys := h.knownKeys(c)
	if r.optional && h.chance(0.3) {
		keys = append(keys, "k5")
	}
	switch way {
	case wayEnvKey:
		r.keys = []string{pick(h.r, keys)}
	case wayItems:
		r.keys = []string{pick(h.r, keys)}
		if k := pick(h.r, keys); h.chance(0.5) && k != r.keys[0] {
			r.keys = append(r.keys, k)
		}
	case wayProjected:
		if h.chance(0.5) {
			r.keys = []string{pick(h.r, keys)}
		}
	}
	return r
}

func (h *history) generate() {
	h.inRender, h.renderData = map[string]bool{}, map[string]map[string]string{}
	for _, c := range historyPool {
		if h.chance(0.7) {
			h.inRender[c.ref()] = true
			h.renderData[c.ref()] = h.randomData()
		}
	}
	kinds := []string{"Deployment", "StatefulSet", "DaemonSet", "CronJob"}
	n := 2 + h.r.IntN(3)
	for i := range n {
		w := &hWorkload{kind: pick(h.r, kinds), name: fmt.Sprintf("w%d", i)}
		for range 1 + h.r.IntN(4) {
			w.refs = append(w.refs, h.newRef())
		}
		h.workloads = append(h.workloads, w)
	}
	h.completeRender()
}

// completeRender adds to the render's configs the keys non-optional
// references name.
func (h *history) completeRender() {
	for _, w := range h.workloads {
		for _, r := range w.refs {
			if data := h.renderData[r.config.ref()]; h.inRender[r.config.ref()] && !r.optional && r.way != wayPull {
				for _, k := range r.keys {
					if _, ok := data[k]; !ok {
						data[k] = h.value()
					}
				}
			}
		}
	}
}

// ---- the stream ---------------------------------------------------------

func (w *hWorkload) podSpec() corev1.PodSpec {
	c := corev1.Container{Name: "app", Image: "registry.invalid/app:1"}
	var spec corev1.PodSpec
	for i, r := range w.refs {
		name := corev1.LocalObjectReference{Name: r.config.name}
		var opt *bool
		if r.optional {
			opt = &r.optional
		}
		var items []corev1.KeyToPath
		for _, k := range r.keys {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
		cm := r.config.kind == hashing.KindConfigMap
		volume := corev1.Volume{Name: fmt.Sprintf("v%d", i)}
		switch r.way {
		case wayEnvKey:
			src := &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: name, Key: r.keys[0], Optional: opt}}
			if cm {
				src = &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: name, Key: r.keys[0], Optional: opt}}
			}
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("E%d", i), ValueFrom: src})
		case wayEnvFrom:
			src := corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: name, Optional: opt}}
			if cm {
				src = corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: name, Optional: opt}}
			}
			c.EnvFrom = append(c.EnvFrom, src)
		case wayVolume, wayItems:
			volume.Secret = &corev1.SecretVolumeSource{SecretName: r.config.name, Items: items, Optional: opt}
			if cm {
				volume.Secret = nil
				volume.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: name, Items: items, Optional: opt}
			}
		case wayProjected:
			src := corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: name, Items: items, Optional: opt}}
			if cm {
				src = corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: name, Items: items, Optional: opt}}
			}
			volume.Projected = &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{src}}
		case wayPull:
			if !slices.Contains(spec.ImagePullSecrets, name) { // the API server refuses a repeated name
				spec.ImagePullSecrets = append(spec.ImagePullSecrets, name)
			}
		}
		if volume.ConfigMap != nil || volume.Secret != nil || volume.Projected != nil {
			spec.Volumes = append(spec.Volumes, volume)
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume.Name, MountPath: "/etc/" + volume.Name})
		}
	}
	spec.Containers = []corev1.Container{c}
	return spec
}

func (w *hWorkload) object(ns string) runtime.Object {
	meta := metav1.ObjectMeta{Name: w.name, Namespace: ns}
	labels := map[string]string{"app": w.name}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: w.podSpec()}
	selector := &metav1.LabelSelector{MatchLabels: labels}
	apps := metav1.TypeMeta{APIVersion: "apps/v1", Kind: w.kind}
	switch w.kind {
	case "StatefulSet":
		return &appsv1.StatefulSet{TypeMeta: apps, ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{ServiceName: w.name, Selector: selector, Template: tmpl}}
	case "DaemonSet":
		return &appsv1.DaemonSet{TypeMeta: apps, ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: selector, Template: tmpl}}
	case "CronJob":
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		return &batchv1.CronJob{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: w.kind}, ObjectMeta: meta,
			Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}}
	}
	return &appsv1.Deployment{TypeMeta: apps, ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: selector, Template: tmpl}}
}

// stream is the manifest in git: the configs of the render, then the
// workloads (as Argo CD's sync waves and Helm order them).
func (h *history) stream() string {
	var docs [][]byte
	for _, c := range historyPool {
		if !h.inRender[c.ref()] {
			continue
		}
		meta := metav1.ObjectMeta{Name: c.name, Namespace: h.ns}
		var obj any = &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta, StringData: h.renderData[c.ref()]}
		if c.kind == hashing.KindConfigMap {
			obj = &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta, Data: h.renderData[c.ref()]}
		}
		docs = append(docs, marshalDoc(h.t, obj, false))
	}
	for _, w := range h.workloads {
		docs = append(docs, marshalDoc(h.t, w.object(h.ns), false))
	}
	return string(join(docs))
}

// podTemplateMap is a rendered workload's pod template.
func podTemplateMap(obj map[string]any) map[string]any {
	kind, _ := obj["kind"].(string)
	tmpl, _, _ := unstructured.NestedMap(obj, templatePath(kind)...)
	return tmpl
}

// templatePath is where a workload of the kind holds its pod template.
func templatePath(kind string) []string {
	if kind == "CronJob" {
		return []string{"spec", "jobTemplate", "spec", "template"}
	}
	return []string{"spec", "template"}
}

// renderedTemplates reads each workload's pod template from a render.
func (h *history) renderedTemplates(rendered string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, doc := range documents([]byte(rendered)) {
		var obj map[string]any
		if err := sigsyaml.Unmarshal(doc, &obj); err != nil {
			h.t.Fatalf("the render: %v", err)
		}
		if kind, _ := obj["kind"].(string); kind != "ConfigMap" && kind != "Secret" && kind != "" {
			name, _, _ := unstructured.NestedString(obj, "metadata", "name")
			out[name] = podTemplateMap(obj)
		}
	}
	return out
}

// ---- the cluster --------------------------------------------------------

var workloadResources = map[string]schema.GroupVersionResource{
	"Deployment":  {Group: "apps", Version: "v1", Resource: "deployments"},
	"StatefulSet": {Group: "apps", Version: "v1", Resource: "statefulsets"},
	"DaemonSet":   {Group: "apps", Version: "v1", Resource: "daemonsets"},
	"CronJob":     {Group: "batch", Version: "v1", Resource: "cronjobs"},
}

// liveWorkload is a workload as the API server holds it.
type liveWorkload struct {
	version     string
	created     time.Time
	annotations map[string]string
	template    corev1.PodTemplateSpec
}

// templateWatch counts the changes of each workload's pod template, from
// watches of the workload kinds (a Deployment's generation also moves
// with its annotations, and a rollout back onto an earlier template makes
// no new ReplicaSet or ControllerRevision).
type templateWatch struct {
	mu      sync.Mutex
	last    map[string]string // pod template, as JSON, by name
	changes map[string]int    // by name; the creation counts one
	version map[string]uint64 // the latest resourceVersion seen, by name
}

func (h *history) watchTemplates() *templateWatch {
	tw := &templateWatch{last: map[string]string{}, changes: map[string]int{}, version: map[string]uint64{}}
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	for _, gvr := range workloadResources {
		wi, err := h.dyn.Resource(gvr).Namespace(h.ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			h.t.Fatalf("watch %s: %v", gvr.Resource, err)
		}
		h.t.Cleanup(wi.Stop)
		go func() {
			for ev := range wi.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
					continue
				}
				tmpl, _ := json.Marshal(podTemplateMap(u.Object))
				rv, _ := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
				tw.mu.Lock()
				if prev, seen := tw.last[u.GetName()]; !seen || prev != string(tmpl) {
					tw.changes[u.GetName()]++
				}
				tw.last[u.GetName()], tw.version[u.GetName()] = string(tmpl), rv
				tw.mu.Unlock()
			}
		}()
	}
	return tw
}

// changesAt is how many times the workload's pod template has changed, once
// the watch has seen the workload at resourceVersion version.
func (tw *templateWatch) changesAt(t testing.TB, name, version string) int {
	t.Helper()
	want, err := strconv.ParseUint(version, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", version, err)
	}
	var n int
	eventually(t, fmt.Sprintf("the watch to see %s at resourceVersion %s", name, version), func(context.Context) (bool, error) {
		tw.mu.Lock()
		defer tw.mu.Unlock()
		n = tw.changes[name]
		return tw.version[name] >= want, nil
	})
	return n
}

func (h *history) workload(w *hWorkload) liveWorkload {
	h.t.Helper()
	u, err := h.dyn.Resource(workloadResources[w.kind]).Namespace(h.ns).Get(context.Background(), w.name, metav1.GetOptions{})
	if err != nil {
		h.fatalf("get %s %s: %v", w.kind, w.name, err)
	}
	var tmpl corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(podTemplateMap(u.Object), &tmpl); err != nil {
		h.fatalf("the pod template of %s: %v", w.name, err)
	}
	return liveWorkload{version: u.GetResourceVersion(), created: u.GetCreationTimestamp().Time, annotations: u.GetAnnotations(), template: tmpl}
}

// readLive reads the configs of the pool, keeping the resourceVersion of
// their last content change, and returns how many were written since the
// last read.
func (h *history) readLive() int {
	h.t.Helper()
	ctx := context.Background()
	now := map[string]liveConfig{}
	cms, err := h.cs.CoreV1().ConfigMaps(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.fatalf("list ConfigMaps: %v", err)
	}
	for _, cm := range cms.Items {
		content, err := hashing.ConfigMapContent(&cm)
		if err != nil {
			h.fatalf("ConfigMap %s: %v", cm.Name, err)
		}
		now["ConfigMap/"+cm.Name] = liveConfig{exists: true, data: cm.Data, rv: cm.ResourceVersion, created: cm.CreationTimestamp.Time, content: content}
	}
	secrets, err := h.cs.CoreV1().Secrets(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.fatalf("list Secrets: %v", err)
	}
	for _, s := range secrets.Items {
		data := map[string]string{}
		for k, v := range s.Data {
			data[k] = string(v)
		}
		now["Secret/"+s.Name] = liveConfig{exists: true, data: data, rv: s.ResourceVersion, created: s.CreationTimestamp.Time, content: hashing.SecretContent(&s)}
	}
	writes := 0
	for _, c := range historyPool {
		before, after := h.live[c.ref()], now[c.ref()]
		if before.rv != after.rv {
			writes++
		}
		after.contentRV = before.contentRV
		if before.exists != after.exists || !maps.Equal(before.data, after.data) {
			after.contentRV = after.rv
		}
		if before.exists && !after.exists {
			h.previous[c.ref()] = before.data
		}
		now[c.ref()] = after
	}
	h.live = now
	return writes
}

// write changes a config's data out of band (kubectl edit, External
// Secrets).
func (h *history) write(c hConfig, edit func(data map[string]string)) {
	h.t.Helper()
	if c.kind == hashing.KindConfigMap {
		h.editConfigMap(c.name, func(cm *corev1.ConfigMap) {
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			edit(cm.Data)
		})
		return
	}
	h.editSecret(c.name, func(s *corev1.Secret) {
		data := map[string]string{}
		for k, v := range s.Data {
			data[k] = string(v)
		}
		edit(data)
		s.Data = map[string][]byte{}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
	})
}

func (h *history) create(c hConfig, data map[string]string) {
	h.t.Helper()
	if c.kind == hashing.KindSecret {
		h.createSecret(c.name, data)
		return
	}
	h.createConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: h.ns}, Data: data})
}

func (h *history) delete(c hConfig) {
	h.t.Helper()
	ctx := context.Background()
	var err error
	if c.kind == hashing.KindSecret {
		err = h.cs.CoreV1().Secrets(h.ns).Delete(ctx, c.name, metav1.DeleteOptions{})
	} else {
		err = h.cs.CoreV1().ConfigMaps(h.ns).Delete(ctx, c.name, metav1.DeleteOptions{})
	}
	if err != nil {
		h.fatalf("delete %s: %v", c.ref(), err)
	}
}

// applyRender renders the stream with bin/confighash and applies it
// server-side as Argo CD would; it returns how long the writes took.
func (h *history) applyRender() time.Duration {
	h.t.Helper()
	h.rendered = render(h.t, h.stream())
	took, err := h.applyTimed(h.rendered, "argocd-controller")
	if err != nil {
		h.fatalf("apply the render: %v", err)
	}
	return took
}

// ---- running ------------------------------------------------------------

func runHistory(t *testing.T, seed uint64) {
	h := &history{env: newEnv(t), t: t, seed: seed, r: rand.New(rand.NewPCG(seed, seed^0x5eed)),
		saw: map[string]map[string]string{}, lenient: map[string]bool{}, live: map[string]liveConfig{}, previous: map[string]map[string]string{},
		first: map[string]map[string]bool{}, hash: map[string]string{}, uses: map[string]string{}, rolledUnder: map[string]string{}, extra: map[string]int{},
		reads: map[string]map[string]string{}, firstEdited: map[string]bool{}, unseen: map[string]bool{}, baseline: map[string]map[string]string{},
		replaced: map[string]bool{}, erased: map[string]map[string]bool{}, forgot: map[string]map[string]bool{}, missed: map[string]int{}, awaits: map[string]func(controller.Outcome) bool{}, baselineWrites: map[int]int{}, others: map[string]int{}, rolledReads: map[string]map[string]string{}}
	h.generate()
	for _, c := range historyPool {
		if !h.inRender[c.ref()] && h.chance(0.7) {
			h.create(c, h.randomData())
		}
	}
	var desc []string
	for _, c := range historyPool {
		lc := "in the render"
		if !h.inRender[c.ref()] {
			lc = "external"
		}
		desc = append(desc, c.ref()+" "+lc)
	}
	for _, w := range h.workloads {
		desc = append(desc, fmt.Sprintf("%s %s reads %v", w.kind, w.name, w.refs))
	}
	h.step("start: %s", strings.Join(desc, "; "))
	h.readLive()
	h.opts = h.testOptions()
	h.opts.MinRollInterval = historyInterval
	h.down, h.fresh = rand.New(rand.NewPCG(seed^0xd0a1, seed)), -1
	h.ctrl = h.start(h.opts)
	h.watch = h.watchTemplates()
	h.templates = map[string]map[string]any{}
	// The first apply: on odd seeds the configs and workloads may come in
	// the controller's initial list, which counts no event and notes no
	// render; even seeds wait until it watches, so it sees them created.
	h.watched = seed%2 == 0
	if h.watched {
		h.ctrl.watching(t)
	}
	applied := h.applyRender()
	h.readLive()
	h.check(0, -1, map[string]int{}, applied, 0)
	for range historySteps {
		h.randomStep()
	}
	t.Logf("seed %d: %d steps, %d with the controller restarted, %d rolls by the controller; rolls the docs allow beyond the model: %v; rolls they allow a restart to miss: %v; other writers: %v; baseline writes per workload and step: %v",
		seed, len(h.steps)-1, h.restarts, h.rolls, h.extra, h.missed, h.others, h.baselineWrites)
}

// randomStep takes one random action, then checks its outcome.
func (h *history) randomStep() {
	h.t.Helper()
	mark, events := h.ctrl.obs.mark(), h.configEvents()
	changes := map[string]int{}
	for _, w := range h.workloads {
		changes[w.name] = h.watch.changesAt(h.t, w.name, h.workload(w).version)
	}
	// A step taken while the controller is down (an upgrade, a crash, its
	// node drained), or that ends with it stopped inside its coalescing
	// window: a new controller, started after the action, must reach the
	// same outcome from what it lists.
	down := h.down.Float64()
	before, after := down < restartBefore, down >= restartBefore && down < restartBefore+restartAfter
	if before {
		h.step("the controller stopped")
		h.ctrl.stop(h.t)
	}
	var applied time.Duration
	switch n := h.r.IntN(120); {
	case n >= 100:
		h.otherWriter(n - 100)
	case n < 16:
		h.editRead()
	case n < 24:
		h.editUnread()
	case n < 32:
		c := h.existing()
		k := fmt.Sprintf("n%d", len(h.steps))
		h.step("add key %s to %s", k, c.ref())
		h.write(c, func(d map[string]string) { d[k] = h.value() })
	case n < 40:
		c := h.existing()
		k := pick(h.r, slices.Sorted(maps.Keys(h.live[c.ref()].data)))
		h.step("remove key %s from %s", k, c.ref())
		h.write(c, func(d map[string]string) { delete(d, k) })
	case n < 47:
		c := h.existing()
		h.step("delete %s", c.ref())
		h.delete(c)
	case n < 56:
		h.recreate()
	case n < 62:
		h.metadata(h.existing())
	case n < 70:
		h.step("re-apply the render")
		applied = h.applyRender()
	case n < 82:
		h.renderContent()
		applied = h.applyRender()
	case n < 92:
		h.renderUses()
		applied = h.applyRender()
	default:
		h.burst()
	}
	if after {
		h.step("the controller stopped right after it")
		h.ctrl.stop(h.t)
	}
	if before || after {
		// The new controller's initial lists count no config event; its
		// outcomes join the stopped one's.
		h.step("a new controller started")
		h.ctrl = h.startSharing(h.ctrl, h.opts)
		h.fresh, events = h.ctrl.obs.mark(), -1
		h.restarts++
		for _, w := range h.workloads {
			for key := range h.erased[w.name] {
				// Removed in this step, or while held back since: the new
				// controller never learns what it said.
				if h.forgot[w.name] == nil {
					h.forgot[w.name] = map[string]bool{}
				}
				h.forgot[w.name][key] = true
			}
			if h.first[w.name] != nil {
				// Held back: the new controller did not see the render
				// taken, as one started while a workload of the first
				// apply could not start (docs/controller.md, Known limits).
				h.unseen[w.name] = true
			}
		}
	}
	h.check(mark, events, changes, applied, h.readLive())
}

// existing is a config of the pool that exists (one is created when none
// does).
func (h *history) existing() hConfig {
	var have []hConfig
	for _, c := range historyPool {
		if h.live[c.ref()].exists && len(h.live[c.ref()].data) > 0 {
			have = append(have, c)
		}
	}
	if len(have) == 0 {
		c := pick(h.r, historyPool)
		h.step("create %s (none existed)", c.ref())
		h.create(c, h.randomData())
		h.readLive()
		return c
	}
	return pick(h.r, have)
}

// readKeys lists the existing config keys some workload reads.
func (h *history) readKeys() [][2]string { return h.readKeysOf(h.workloads) }

// readKeysOf lists the existing config keys the workloads read.
func (h *history) readKeysOf(workloads []*hWorkload) [][2]string {
	var out [][2]string
	for _, w := range workloads {
		for _, r := range w.refs {
			lc := h.live[r.config.ref()]
			keys := r.keys
			if r.whole() {
				keys = slices.Sorted(maps.Keys(lc.data))
			}
			for _, k := range keys {
				if _, ok := lc.data[k]; ok {
					out = append(out, [2]string{r.config.ref(), k})
				}
			}
		}
	}
	return out
}

func configOf(ref string) hConfig {
	kind, name, _ := strings.Cut(ref, "/")
	return hConfig{hashing.Kind(kind), name}
}

func (h *history) editRead() {
	read := h.readKeys()
	if len(read) == 0 {
		h.editUnread()
		return
	}
	rk := pick(h.r, read)
	h.step("edit %s key %s (read)", rk[0], rk[1])
	h.write(configOf(rk[0]), func(d map[string]string) { d[rk[1]] = h.value() })
}

func (h *history) editUnread() {
	read := map[[2]string]bool{}
	for _, rk := range h.readKeys() {
		read[rk] = true
	}
	var unread [][2]string
	for _, c := range historyPool {
		for k := range h.live[c.ref()].data {
			if !read[[2]string{c.ref(), k}] {
				unread = append(unread, [2]string{c.ref(), k})
			}
		}
	}
	if len(unread) == 0 {
		c := h.existing()
		k := fmt.Sprintf("n%d", len(h.steps))
		h.step("add key %s to %s (nobody reads one)", k, c.ref())
		h.write(c, func(d map[string]string) { d[k] = h.value() })
		return
	}
	slices.SortFunc(unread, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	rk := pick(h.r, unread)
	h.step("edit %s key %s (unread)", rk[0], rk[1])
	h.write(configOf(rk[0]), func(d map[string]string) { d[rk[1]] = h.value() })
}

// recreate creates a config of the pool that does not exist, with the
// content it had (or the render's) or another.
func (h *history) recreate() {
	var gone []hConfig
	for _, c := range historyPool {
		if !h.live[c.ref()].exists {
			gone = append(gone, c)
		}
	}
	if len(gone) == 0 {
		c := h.existing()
		h.step("delete %s (none to create)", c.ref())
		h.delete(c)
		return
	}
	c := pick(h.r, gone)
	data, how := h.randomData(), "new content"
	if prev := h.previous[c.ref()]; prev != nil && h.chance(0.5) {
		data, how = maps.Clone(prev), "its content before"
	}
	h.step("create %s with %s", c.ref(), how)
	h.create(c, data)
}

func (h *history) metadata(c hConfig) {
	h.step("labels and annotations of %s", c.ref())
	label := map[string]string{"team": h.value()}
	if c.kind == hashing.KindSecret {
		h.editSecret(c.name, func(s *corev1.Secret) { s.Labels, s.Annotations = label, label })
		return
	}
	h.editConfigMap(c.name, func(cm *corev1.ConfigMap) { cm.Labels, cm.Annotations = label, label })
}

// burst is two edits of read keys in quick succession; the second takes
// the first back, or edits another key.
func (h *history) burst() {
	read := h.readKeys()
	if len(read) == 0 {
		h.editUnread()
		return
	}
	rk := pick(h.r, read)
	c := configOf(rk[0])
	before := h.live[rk[0]].data[rk[1]]
	h.write(c, func(d map[string]string) { d[rk[1]] = h.value() })
	if h.chance(0.3) {
		h.step("burst: edit %s key %s, then take it back", rk[0], rk[1])
		h.write(c, func(d map[string]string) { d[rk[1]] = before })
		return
	}
	rk2 := pick(h.r, read)
	h.step("burst: edit %s key %s, then %s key %s", rk[0], rk[1], rk2[0], rk2[1])
	h.write(configOf(rk2[0]), func(d map[string]string) { d[rk2[1]] = h.value() })
}

// renderContent changes the content of a config in git: a value, a new
// key, a key removed (one no reference requires); or moves a config into
// the render or out of it.
func (h *history) renderContent() {
	var in []hConfig
	for _, c := range historyPool {
		if h.inRender[c.ref()] {
			in = append(in, c)
		}
	}
	if len(in) == 0 || h.chance(0.15) {
		c := pick(h.r, historyPool)
		if h.inRender[c.ref()] {
			h.step("new render: %s leaves the render (applied, not pruned)", c.ref())
			delete(h.inRender, c.ref())
			delete(h.renderData, c.ref())
			return
		}
		data := maps.Clone(h.live[c.ref()].data)
		if len(data) == 0 || h.chance(0.3) {
			data = h.randomData()
		}
		h.step("new render: %s enters the render with %v", c.ref(), slices.Sorted(maps.Keys(data)))
		h.inRender[c.ref()], h.renderData[c.ref()] = true, data
		h.completeRender()
		return
	}
	c := pick(h.r, in)
	data := h.renderData[c.ref()]
	required := map[string]bool{}
	for _, w := range h.workloads {
		for _, r := range w.refs {
			if r.config == c && !r.optional && r.way != wayPull {
				for _, k := range r.keys {
					required[k] = true
				}
			}
		}
	}
	var removable []string
	for _, k := range slices.Sorted(maps.Keys(data)) {
		if !required[k] && len(data) > 1 {
			removable = append(removable, k)
		}
	}
	switch n := h.r.IntN(4); {
	case n == 0 && len(removable) > 0:
		k := pick(h.r, removable)
		h.step("new render: %s without key %s", c.ref(), k)
		delete(data, k)
	case n == 1:
		k := fmt.Sprintf("g%d", len(h.steps))
		h.step("new render: %s with a new key %s", c.ref(), k)
		data[k] = h.value()
	default:
		k := pick(h.r, slices.Sorted(maps.Keys(data)))
		h.step("new render: %s key %s changed", c.ref(), k)
		data[k] = h.value()
	}
}

// renderUses changes what a workload reads, in git: a reference added,
// removed, or replaced by another.
func (h *history) renderUses() {
	w := pick(h.r, h.workloads)
	switch i := h.r.IntN(len(w.refs)); {
	case h.chance(0.4):
		r := h.newRef()
		h.step("new render: %s also reads %s", w.name, r)
		w.refs = append(w.refs, r)
	case len(w.refs) > 1 && h.chance(0.5):
		h.step("new render: %s no longer reads %s", w.name, w.refs[i])
		w.refs = slices.Delete(w.refs, i, i+1)
	default:
		r := h.newRef()
		h.step("new render: %s reads %s instead of %s", w.name, r, w.refs[i])
		w.refs[i] = r
	}
	h.completeRender()
}

// configEvents is how many ConfigMap and Secret events the controller
// has handled.
func (h *history) configEvents() float64 {
	return h.ctrl.metric("confighash_config_events_total", nil)
}

// check waits until the controller has handled a step (its config events,
// then a decision on each workload from the live configs and pod spec),
// then checks each workload's rolls and pod template against the model,
// and moves the model on. events is the count of config events before the
// step (negative: not counted), writes how many config writes the step
// made, applied how long the render's apply took (0: no render applied).
func (h *history) check(mark int, events float64, changes map[string]int, applied time.Duration, writes int) {
	h.t.Helper()
	if events >= 0 && writes > 0 {
		eventually(h.t, fmt.Sprintf("the controller to see %d config writes", writes), func(context.Context) (bool, error) {
			return h.configEvents() >= events+float64(writes), nil
		})
	}
	templates := h.templates
	if applied > 0 {
		templates = h.renderedTemplates(h.rendered)
	}
	type expectation struct {
		changed bool // the render changed the pod template
		missing []string
		rolls   []int // the controller's rolls allowed
		allowed string
		// neverRan: the pods of the pod template could not start until
		// now; landed: the change is of optional configs that landed
		// with the pods; unrecorded: an edit of external configs whose
		// baseline another writer removed, the controller restarted
		// before it wrote it again. Each allows no roll.
		neverRan, landed bool
		unrecorded       string
		hash             string
		uses             string
	}
	expect := map[string]*expectation{}
	for _, w := range h.workloads {
		ex := &expectation{missing: missing(w, h.live), rolls: []int{0}}
		expect[w.name] = ex
		lw := h.workload(w)
		ex.hash = lw.template.Annotations["confighash.dev/hash"]
		ex.uses = controller.UsesPrint(hashing.Discover(&lw.template.Spec))
		if want, _, _ := unstructured.NestedString(templates[w.name], "metadata", "annotations", "confighash.dev/hash"); want != ex.hash {
			h.fatalf("%s: the pod template's confighash.dev/hash is %q, the render's %q", w.name, ex.hash, want)
		}
		_, existed := h.templates[w.name]
		ex.changed = (applied > 0 && (!existed || !equalJSON(h.templates[w.name], templates[w.name]))) || h.replaced[w.name]
		now, saw := reads(w, h.live), h.saw[w.name]
		moved := !maps.Equal(now, saw)
		switch {
		case ex.changed:
			// The pods the render starts read the live content; the
			// controller adds no roll (S2, the render-baseline rule).
			// The docs allow one where it cannot tell that the pods did:
			switch {
			case applied > testWindow/2:
				ex.allowed = "the render's configs and workloads applied over more than the coalescing window"
			case existed && moved && ex.hash == h.hash[w.name] && ex.uses == h.uses[w.name]:
				ex.allowed = "a consumed config changed with a template change that moves neither the render-time hash nor what the pods consume"
			case existed && h.rolledUnder[w.name] == ex.hash+" "+ex.uses && !maps.Equal(h.rolledReads[w.name], now):
				// TestDecide's "the render rolled under applied again after
				// a later one (helm rollback) ...: roll".
				ex.allowed = "the render the controller rolled under, applied again after another: its record on the pod template stands"
			case h.replaced[w.name] && h.inStreamDiffers(w, now):
				// docs/controller.md: a workload written back with kubectl
				// replace after the controller rolled it for an
				// out-of-band edit of an in-stream config.
				ex.allowed = "written back without the controller's record while the in-stream content differs from the render"
			case existed && h.first[w.name] != nil && moved:
				// docs/controller.md, Known limits: a workload whose pods
				// could not start is rolled once when they can if a config
				// they read changed meanwhile (here the template change
				// lets them start).
				ex.allowed = "they could not start, and a config they read changed meanwhile"
			case existed && h.externalMoved(w, now):
				// Where the controller did not see the template change come
				// after the config's (TestDecide's "the same, not seen ...:
				// roll"), or the workload has no render-time hash.
				ex.allowed = "an external config changed since its baseline, before the template change"
			case h.restarted() && h.inStreamDiffers(w, now):
				// docs/controller.md, Known limits: a template change the
				// controller did not see, over in-stream content edited out
				// of band; it cannot tell that the pods read the edit.
				ex.allowed = "a template change made while the controller was down, the in-stream content edited out of band"
			}
			if h.replaced[w.name] && ex.allowed != "" {
				ex.allowed = "another writer's template: " + ex.allowed
			}
			h.saw[w.name], h.first[w.name], h.firstEdited[w.name], h.unseen[w.name] = now, nil, false, false
			if len(ex.missing) > 0 {
				// The content that lets them start is their first.
				h.first[w.name] = configsOf(ex.missing)
				h.lenient[w.name] = existed
				h.unseen[w.name] = !existed && events < 0 && !h.watched
			}
		case len(ex.missing) > 0: // held back (rule 1)
			for k, v := range now {
				if prev, had := h.reads[w.name][k]; had && h.first[w.name][configOfKey(k)] && h.reads[w.name][configOfKey(k)] == "true" && prev != v {
					h.firstEdited[w.name] = true
				}
			}
		default:
			if first := h.first[w.name]; first != nil {
				// The pods could not start until now: what they lacked,
				// they read now for the first time (a baseline, no roll).
				for k := range saw {
					if first[configOfKey(k)] {
						delete(saw, k)
					}
				}
				for k, v := range now {
					if first[configOfKey(k)] {
						saw[k] = v
					}
				}
				lastStep, unseen := false, false
				if !h.lenient[w.name] {
					// Created while they could not start: no pod of the
					// workload ever ran, so every config is read for the
					// first time now, the ones edited meanwhile too, the
					// render's as well (docs/controller.md, start-up:
					// nothing is remembered, and no change counts against
					// the render, while a config the pods require is
					// missing).
					lastStep = renderMoved(h.inRender, h.reads[w.name], now)
					unseen = h.unseen[w.name] && renderMoved(h.inRender, saw, now)
					saw = maps.Clone(now)
				}
				switch {
				case unseen:
					// docs/controller.md, Known limits: created in the
					// first apply, or held back when a new controller
					// started, it may have come in the controller's
					// initial list, which notes no render; the render's
					// configs edited meanwhile are then compared with the
					// render-time hash (rule 3).
					ex.allowed = "the controller may not have seen the render taken (it started while they could not start), a config of the render edited meanwhile"
				case lastStep:
					// An edit in the step that let them start: its handler
					// may find the config they lacked in the cache already,
					// and counts it as made once they could run.
					ex.allowed = "a config of the render edited in the step that let them start"
				case h.lenient[w.name]:
					ex.allowed = "the pod template changed while they could not start: the baseline of the pods before stands"
					// The pods of that template never ran: they read
					// everything for the first time now (no roll), though
					// the model keeps what the pods before read.
					ex.neverRan = true
				case h.firstEdited[w.name]:
					ex.allowed = "a config they lacked was created, then edited while another still kept them from starting"
				}
				h.first[w.name], h.lenient[w.name], h.firstEdited[w.name], h.unseen[w.name] = nil, false, false, false
			}
			if !maps.Equal(now, saw) {
				ex.rolls = []int{1}
				if h.forgot[w.name][externalBaselineKey] && !renderMoved(h.inRender, saw, now) {
					// docs/controller.md, Known limits: an edit of an
					// external config and its baseline removed by another
					// writer, the controller restarted before it wrote the
					// baseline again (down, or holding it back while the
					// pods cannot start): nothing records what they read.
					ex.unrecorded = "an external config edited and its baseline removed by another writer, the controller restarted before it wrote the baseline again"
				}
				// docs/controller.md, start-up: an optional external
				// config created together with the workload or with a
				// config its pods require is what they read.
				ex.landed = h.landed(w, lw.created, now, saw)
			}
			if ex.allowed == "" && h.forgot[w.name][renderBaselineKey] && h.inStreamDiffers(w, now) {
				// docs/controller.md (TestRestartWhileABaselineIsHeld): a
				// render baseline another writer removed, the controller
				// restarted before it wrote it again; the in-stream
				// content differs from the render-time hash, and it rolls.
				ex.allowed = "a render baseline removed by another writer, the controller restarted before it wrote it again"
			}
			h.saw[w.name] = now
		}
		if ex.allowed != "" {
			ex.rolls = append(ex.rolls, ex.rolls[0]+1)
		}
		if (ex.neverRan || ex.landed || ex.unrecorded != "") && ex.rolls[0] != 0 {
			ex.rolls = append([]int{0}, ex.rolls...)
		}
		h.hash[w.name], h.uses[w.name], h.reads[w.name] = ex.hash, ex.uses, now
		if _, created := h.baseline[w.name]; len(ex.missing) == 0 || !created {
			// The controller has recorded the external configs as they are
			// (a baseline of a config the render now holds may stay); at
			// the workload's creation, it takes them as the pods' even
			// while they cannot start, all but those they lack (the
			// configs first seen, docs/controller.md's start-up).
			if h.baseline[w.name] == nil {
				h.baseline[w.name] = map[string]string{}
			}
			for k, v := range now {
				if ref := configOfKey(k); !h.inRender[ref] && (len(ex.missing) == 0 || !h.first[w.name][ref]) {
					h.baseline[w.name][k] = v
				}
			}
		}
	}
	h.templates = templates
	clear(h.replaced)
	for name := range h.erased {
		// A workload held back by a missing config keeps what the removed
		// baseline said in memory only, until it can write it again.
		if len(expect[name].missing) == 0 {
			delete(h.erased, name)
			delete(h.forgot, name)
		}
	}
	var pending string
	settled := func() bool {
		for _, w := range h.workloads {
			ex := expect[w.name]
			o := h.ctrl.obs.last(w.name)
			want := "in_sync"
			if len(ex.missing) > 0 {
				want = "missing_config"
			}
			if h.fresh >= 0 && len(h.ctrl.obs.since(h.fresh, w.name)) == 0 {
				pending = w.name + ": no outcome of the new controller yet"
				return false
			}
			if seen := h.awaits[w.name]; seen != nil {
				if !slices.ContainsFunc(h.ctrl.obs.since(mark, w.name), seen) {
					pending = w.name + ": no outcome yet that saw the other writer's write"
					return false
				}
				delete(h.awaits, w.name)
			}
			if o.Result != want || o.Input.RawRenderHash != ex.hash || o.Input.Uses != ex.uses || !h.readCurrent(w, o) {
				pending = fmt.Sprintf("%s: want %s with render hash %q, uses %s, configs at %v; the last outcome: %s %s, render hash %q, uses %s, configs at %v",
					w.name, want, ex.hash, ex.uses, h.contentVersions(w), o.Result, o.Decision.Reason, o.Input.RawRenderHash, o.Input.Uses, o.ConfigVersions)
				return false
			}
		}
		return true
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(waitTimeout); !settled(); <-tick.C {
		if time.Now().After(deadline) {
			h.fatalf("the controller did not decide from the live state in %s: %s", waitTimeout, pending)
		}
	}
	h.fresh = -1
	for _, w := range h.workloads {
		ex := expect[w.name]
		rolled := h.ctrl.obs.count(mark, func(o controller.Outcome) bool { return o.Request.Name == w.name && o.Result == "rolled" })
		lw := h.workload(w)
		var why []string
		for _, o := range h.ctrl.obs.since(mark, w.name) {
			if o.Result == "rolled" {
				why = append(why, fmt.Sprintf("%s (changed %v, render %s, render started %t)", o.Decision.Reason, o.Decision.Changed, o.Input.RawRenderHash, o.Input.RenderStarted))
			}
		}
		if !slices.Contains(ex.rolls, rolled) {
			h.t.Logf("%s: annotations %v, pod template annotations %v", w.name, lw.annotations, lw.template.Annotations)
			for _, o := range h.ctrl.obs.since(0, w.name) { // the whole history: a record may date back
				h.t.Logf("%s: %s %s, render %s, render started %t, live in %s, render baseline %q, uses %s, baseline %v (uses %s), first seen %v, live external %v, configs at %v",
					w.name, o.Result, o.Decision.Reason, o.Input.RawRenderHash, o.Input.RenderStarted, o.Input.LiveIn, o.Input.RenderBaseline,
					o.Input.Uses, o.Input.Baseline, o.Input.BaselineUses, o.Input.FirstSeen, o.Input.LiveExternal, o.ConfigVersions)
			}
			h.fatalf("%s %s: the controller rolled it %d times %v, the docs say %v (missing %v, render changed its pod template: %t, apply took %s)",
				w.kind, w.name, rolled, why, ex.rolls, ex.missing, ex.changed, applied)
		}
		h.rolls += rolled
		// A bounded number of writes: the controller writes a baseline
		// (one another writer removed, or of a new external config, or a
		// render baseline) at most once per workload and step.
		if n := h.ctrl.obs.count(mark, func(o controller.Outcome) bool {
			return o.Request.Name == w.name && o.Result == "baseline_recorded"
		}); n > maxBaselineWrites {
			h.fatalf("%s %s: the controller wrote its baselines %d times in one step, want at most %d", w.kind, w.name, n, maxBaselineWrites)
		} else {
			h.baselineWrites[n]++
		}
		if rolled > ex.rolls[0] && ex.allowed != "" {
			h.extra[fmt.Sprintf("%s: %v", ex.allowed, why)]++
		}
		if ex.unrecorded != "" && rolled == 0 {
			h.missed[ex.unrecorded]++
		}
		want := changes[w.name] + rolled
		if ex.changed {
			want++
		}
		if got := h.watch.changesAt(h.t, w.name, lw.version); got != want {
			h.fatalf("%s %s: its pod template changed %d times, want %d (the render changed it: %t, %d rolls by the controller)",
				w.kind, w.name, got-changes[w.name], want-changes[w.name], ex.changed, rolled)
		}
		if rolled > 0 {
			h.checkRecord(w, lw)
			h.rolledUnder[w.name], h.rolledReads[w.name] = ex.hash+" "+ex.uses, h.reads[w.name]
		}
	}
}

// readCurrent says whether an outcome read each config the workload
// consumes as it is now: absent when it is absent, else at or after its
// last content change (one etcd numbers every write).
func (h *history) readCurrent(w *hWorkload, o controller.Outcome) bool {
	for _, r := range w.refs {
		lc := h.live[r.config.ref()]
		got, ok := o.ConfigVersions[r.config.ref()]
		if !ok {
			return false
		}
		if !lc.exists {
			if got != "" {
				return false
			}
			continue
		}
		v, err1 := strconv.ParseUint(got, 10, 64)
		min, err2 := strconv.ParseUint(lc.contentRV, 10, 64)
		if err1 != nil || err2 != nil || v < min {
			return false
		}
	}
	return true
}

// checkRecord checks the controller's record on a pod template it rolled:
// the hash of everything the pods consume, live, and the render-time hash
// it rolled under.
func (h *history) checkRecord(w *hWorkload, lw liveWorkload) {
	lookup := func(kind hashing.Kind, name string) (hashing.Content, bool) {
		lc := h.live[string(kind)+"/"+name]
		return lc.content, lc.exists
	}
	ann := lw.template.Annotations
	want := hashing.Compute(h.ns, hashing.Discover(&lw.template.Spec), lookup, hashing.Options{})
	if got := ann["confighash.dev/controller-hash"]; got != want {
		h.fatalf("%s: controller-hash %s, the live content of what it consumes hashes to %s", w.name, got, want)
	}
	base := cmp.Or(ann["confighash.dev/hash"], "none")
	if got := ann["confighash.dev/controller-base"]; got != base {
		h.fatalf("%s: controller-base %s, want the render-time hash %s", w.name, got, base)
	}
}

// equalJSON compares two decoded documents.
func equalJSON(a, b map[string]any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// contentVersions is the resourceVersion of the last content change of
// each config a workload consumes ("" when absent).
func (h *history) contentVersions(w *hWorkload) map[string]string {
	out := map[string]string{}
	for _, r := range w.refs {
		out[r.config.ref()] = h.live[r.config.ref()].contentRV
	}
	return out
}

// landed reports whether every config whose reads differ between saw and
// now is an optional external config of w that did not exist in saw and
// was created together with the workload (created at workload) or with a
// config its pods require: the other created after it, or at most a
// second before it, by the API server's creation times (whole seconds).
func (h *history) landed(w *hWorkload, workload time.Time, now, saw map[string]string) bool {
	optional, required := map[string]bool{}, []time.Time{workload}
	for _, r := range w.refs {
		ref := r.config.ref()
		if _, seen := optional[ref]; !seen {
			optional[ref] = true
		}
		if !r.optional && r.way != wayPull {
			optional[ref] = false
			required = append(required, h.live[ref].created)
		}
	}
	for k := range saw {
		if _, ok := now[k]; !ok {
			return false // a key no longer read: the config existed
		}
	}
	for k, v := range now {
		ref := configOfKey(k)
		if saw[k] == v {
			continue
		}
		created := h.live[ref].created
		if h.inRender[ref] || !optional[ref] || saw[ref] != "false" || created.IsZero() ||
			!slices.ContainsFunc(required, func(other time.Time) bool { return !other.IsZero() && !other.Before(created.Add(-time.Second)) }) {
			return false
		}
	}
	return true
}

// renderMoved reports whether a config of the render reads differently
// in a and b (a key in one of them only counts).
func renderMoved(inRender map[string]bool, a, b map[string]string) bool {
	differs := func(x, y map[string]string) bool {
		for k, v := range x {
			if w, ok := y[k]; inRender[configOfKey(k)] && (!ok || w != v) {
				return true
			}
		}
		return false
	}
	return differs(a, b) || differs(b, a)
}

// configOfKey is the config of an entry of reads or missing.
func configOfKey(k string) string {
	ref, _, _ := strings.Cut(k, " ")
	return ref
}

func configsOf(entries []string) map[string]bool {
	out := map[string]bool{}
	for _, e := range entries {
		out[configOfKey(e)] = true
	}
	return out
}

// since is the outcomes for the workload name after mark.
func (o *observer) since(mark int, name string) []controller.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []controller.Outcome
	for _, x := range o.list[mark:] {
		if x.Request.Name == name {
			out = append(out, x)
		}
	}
	return out
}

// externalMoved says whether an external config the workload reads (one
// the render does not hold) differs from what it read of it when last in
// sync.
func (h *history) externalMoved(w *hWorkload, now map[string]string) bool {
	base := h.baseline[w.name]
	for k, v := range now {
		if was, had := base[k]; had && !h.inRender[configOfKey(k)] && was != v {
			return true
		}
	}
	return false
}

// A history the random ones met (seeds 5, 160 and 286 of
// TestControllerRandomHistories, written small): an external Secret edited
// a moment before a new render lands (External Secrets rotating a password
// during a GitOps sync). The render's template change, written after the
// edit, starts the pods on the edited Secret, so the workload rolls once,
// for the render, and the controller records the Secret's baseline instead
// of rolling it a second time.
func TestExternalEditedThenRender(t *testing.T) {
	t.Parallel()
	s := setup(t, "Deployment")
	changed := defaultApp("Deployment")
	changed.logLevel = "debug"
	rerendered := render(t, s.stream(changed))
	mark := s.ctrl.obs.mark()
	rv := s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
	if err := s.apply(rerendered, "kubectl"); err != nil {
		t.Fatal(err)
	}
	newHash := s.deployment(workloadName).Spec.Template.Annotations["confighash.dev/hash"]
	recorded, _ := s.ctrl.obs.waitFor(t, mark, "in sync with the new render, having read the edited Secret", func(o controller.Outcome) bool {
		return is("Deployment", "in_sync")(o) && o.Input.RawRenderHash == newHash && o.ConfigVersions["Secret/db-creds"] == rv
	})
	if got := s.rollouts(); got != 1 {
		t.Errorf("%d rollouts, want 1 (the render's)", got)
	}
	if got := s.controllerRollouts(); got != 0 {
		t.Errorf("the controller rolled it %d times, want 0", got)
	}
	if got, want := s.workloadAnnotations().meta["confighash.dev/external-baseline"], controller.FormatBaseline(recorded.Input.LiveExternal, "", recorded.Input.Uses); got != want {
		t.Errorf("external-baseline %q, want the edited Secret's %q", got, want)
	}
}

// ---- other writers of the workloads -------------------------------------

// externalBaselineKey is the controller's external baseline on a
// workload's metadata (renderBaselineKey, renderbaseline_test.go, the
// other).
const externalBaselineKey = "confighash.dev/external-baseline"

// otherWriter is an action of another writer of a workload
// (docs/controller.md, "Other controllers writing the workload"), n of 20:
// its baselines removed, at rest or right after an edit of a config it
// reads (inside the coalescing window); its pod template written back
// without the controller's record; its replicas moved.
func (h *history) otherWriter(n int) {
	w := pick(h.r, h.workloads)
	switch {
	case n < 6:
		h.others["baselines removed"]++
		h.removeBaselines(w)
	case n < 11:
		h.others["baselines removed after an edit"]++
		h.editReadBy(w)
		h.removeBaselines(w)
	case n < 17:
		if h.chance(0.4) {
			h.others["template written back after an edit"]++
			h.editReadBy(w)
		} else {
			h.others["template written back"]++
		}
		h.replaceTemplate(w)
	default:
		h.others["replicas moved"]++
		h.scale()
	}
}

// editReadBy edits a key the workload reads (another one when it reads
// none that exists).
func (h *history) editReadBy(w *hWorkload) {
	read := h.readKeysOf([]*hWorkload{w})
	if len(read) == 0 {
		h.editRead()
		return
	}
	rk := pick(h.r, read)
	h.step("edit %s key %s (read by %s)", rk[0], rk[1], w.name)
	h.write(configOf(rk[0]), func(d map[string]string) { d[rk[1]] = h.value() })
}

// updateWorkload reads a workload and writes it back changed, as
// fieldManager, retrying on a conflict with the controller's writes; it
// returns the workload before and after.
func (h *history) updateWorkload(w *hWorkload, fieldManager string, edit func(u *unstructured.Unstructured) *unstructured.Unstructured) (before, after *unstructured.Unstructured) {
	h.t.Helper()
	ctx := context.Background()
	client := h.dyn.Resource(workloadResources[w.kind]).Namespace(h.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if before, err = client.Get(ctx, w.name, metav1.GetOptions{}); err != nil {
			return err
		}
		after, err = client.Update(ctx, edit(before.DeepCopy()), metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
	if err != nil {
		h.fatalf("update %s %s as %s: %v", w.kind, w.name, fieldManager, err)
	}
	return before, after
}

// removeBaselines removes the controller's baselines from the workload's
// metadata, as an operator that writes its own annotations over the
// workload's does, or kubectl annotate … confighash.dev/external-baseline-.
// The pods read what they read.
func (h *history) removeBaselines(w *hWorkload) {
	keys := []string{externalBaselineKey}
	if h.chance(0.5) {
		keys = append(keys, renderBaselineKey)
	}
	before, _ := h.updateWorkload(w, "operator", func(u *unstructured.Unstructured) *unstructured.Unstructured {
		ann := u.GetAnnotations()
		for _, k := range keys {
			delete(ann, k)
		}
		u.SetAnnotations(ann)
		return u
	})
	var removed []string
	for _, k := range keys {
		if _, had := before.GetAnnotations()[k]; had {
			removed = append(removed, k)
		}
	}
	h.step("another writer removes %v from %s %s (it had %v)", keys, w.kind, w.name, removed)
	if len(removed) == 0 {
		h.others["of which nothing to remove"]++
	} else {
		for _, k := range removed {
			h.erase(w, k)
		}
		h.await(w, func(o controller.Outcome) bool {
			return len(o.Input.Baseline) == 0 && (!slices.Contains(removed, renderBaselineKey) || o.Input.RenderBaseline == "")
		})
	}
}

// restarted says a new controller was started in this step (until its
// check has seen it decide).
func (h *history) restarted() bool { return h.fresh >= 0 }

// erase notes that another writer removed the workload's baseline key.
func (h *history) erase(w *hWorkload, key string) {
	if h.erased[w.name] == nil {
		h.erased[w.name] = map[string]bool{}
	}
	h.erased[w.name][key] = true
}

// replaceTemplate writes the workload's rendered pod template back over
// the live one, as an operator's Update of its desired template does, or
// the whole rendered workload, as kubectl replace does (which removes the
// baselines too). Where the live template held the controller's record,
// that restarts the pods on the live content.
func (h *history) replaceTemplate(w *hWorkload) {
	whole := h.chance(0.5)
	var rendered *unstructured.Unstructured
	for _, doc := range documents([]byte(h.rendered)) {
		var obj map[string]any
		if err := sigsyaml.Unmarshal(doc, &obj); err != nil {
			h.fatalf("the render: %v", err)
		}
		if u := (&unstructured.Unstructured{Object: obj}); u.GetKind() == w.kind && u.GetName() == w.name {
			rendered = u
		}
	}
	if rendered == nil {
		h.fatalf("%s %s is not in the render", w.kind, w.name)
	}
	how, manager := "an operator's Update writes its pod template", "operator"
	if whole {
		how, manager = "kubectl replace writes the render", "kubectl-replace"
	}
	before, after := h.updateWorkload(w, manager, func(u *unstructured.Unstructured) *unstructured.Unstructured {
		if whole {
			r := rendered.DeepCopy()
			r.SetResourceVersion(u.GetResourceVersion())
			return r
		}
		if err := unstructured.SetNestedMap(u.Object, runtime.DeepCopyJSON(podTemplateMap(rendered.Object)), templatePath(w.kind)...); err != nil {
			h.fatalf("set the pod template of %s: %v", w.name, err)
		}
		return u
	})
	changed := !equalJSON(podTemplateMap(before.Object), podTemplateMap(after.Object))
	h.step("%s over %s %s (its pod template changed: %t)", how, w.kind, w.name, changed)
	if !changed {
		h.others["of which the template unchanged"]++
	} else {
		h.replaced[w.name] = true
		h.rolledUnder[w.name] = ""
	}
	_, hadRecord, _ := unstructured.NestedString(podTemplateMap(before.Object), "metadata", "annotations", "confighash.dev/controller-hash")
	_, hadBaseline := before.GetAnnotations()[externalBaselineKey]
	if whole && hadBaseline {
		h.erase(w, externalBaselineKey)
	}
	if _, hadRender := before.GetAnnotations()[renderBaselineKey]; whole && hadRender {
		h.erase(w, renderBaselineKey)
	}
	if hadRecord || (whole && hadBaseline) {
		h.await(w, func(o controller.Outcome) bool {
			return (!hadRecord || o.Input.ControllerHash == "") && (!whole || !hadBaseline || len(o.Input.Baseline) == 0)
		})
	}
}

// scale moves a Deployment's or StatefulSet's replicas through the scale
// subresource, as an autoscaler does: nothing rolls.
func (h *history) scale() {
	var scalable []*hWorkload
	for _, w := range h.workloads {
		if w.kind == "Deployment" || w.kind == "StatefulSet" {
			scalable = append(scalable, w)
		}
	}
	if len(scalable) == 0 {
		h.removeBaselines(pick(h.r, h.workloads))
		return
	}
	w := pick(h.r, scalable)
	ctx := context.Background()
	var current *autoscalingv1.Scale
	var err error
	if w.kind == "Deployment" {
		current, err = h.cs.AppsV1().Deployments(h.ns).GetScale(ctx, w.name, metav1.GetOptions{})
	} else {
		current, err = h.cs.AppsV1().StatefulSets(h.ns).GetScale(ctx, w.name, metav1.GetOptions{})
	}
	if err != nil {
		h.fatalf("the scale of %s %s: %v", w.kind, w.name, err)
	}
	replicas := current.Spec.Replicas%4 + 1 // another number of replicas
	h.step("an autoscaler scales %s %s from %d to %d replicas", w.kind, w.name, current.Spec.Replicas, replicas)
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: h.ns}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if w.kind == "Deployment" {
		_, err = h.cs.AppsV1().Deployments(h.ns).UpdateScale(ctx, w.name, scale, metav1.UpdateOptions{FieldManager: "hpa"})
	} else {
		_, err = h.cs.AppsV1().StatefulSets(h.ns).UpdateScale(ctx, w.name, scale, metav1.UpdateOptions{FieldManager: "hpa"})
	}
	if err != nil {
		h.fatalf("scale %s %s: %v", w.kind, w.name, err)
	}
	h.await(w, func(controller.Outcome) bool { return true })
}

// await makes the step's check wait for an outcome of the workload that
// saw another writer's write (seen holds for it), so that it does not take
// an outcome from before the write for the controller's decision on it.
func (h *history) await(w *hWorkload, seen func(controller.Outcome) bool) {
	h.awaits[w.name] = seen
}

// inStreamDiffers says whether what the workload reads of the configs the
// render holds differs from the render's content of them.
func (h *history) inStreamDiffers(w *hWorkload, now map[string]string) bool {
	rendered := map[string]liveConfig{}
	for ref, data := range h.renderData {
		rendered[ref] = liveConfig{exists: true, data: data}
	}
	want := reads(w, rendered)
	for k, v := range now {
		if h.inRender[configOfKey(k)] && want[k] != v {
			return true
		}
	}
	for k, v := range want {
		if h.inRender[configOfKey(k)] && now[k] != v {
			return true
		}
	}
	return false
}
