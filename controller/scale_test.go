package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/testing/kubetest"
)

// ScaleResult is one row of the scale benchmark; hack/scaleplot draws them.
type ScaleResult struct {
	Workloads  int `json:"workloads"`
	ConfigMaps int `json:"configMaps"`
	Secrets    int `json:"secrets"`
	Changes    int `json:"changes"`
	// Shape is "minimal" (one container, two references, the default) or
	// "realistic" (chart-shaped pod specs, see realisticPodSpec; a tenth
	// each StatefulSets and DaemonSets). PayloadBytes is the size of each
	// workload's files ConfigMap. WorkloadBytes is the size of workload 0 as
	// the API server returns it in JSON (managedFields included).
	Shape         string `json:"shape,omitempty"`
	PayloadBytes  int    `json:"payloadBytes,omitempty"`
	WorkloadBytes int    `json:"workloadBytes,omitempty"`
	Deployments   int    `json:"deployments,omitempty"`
	StatefulSets  int    `json:"statefulSets,omitempty"`
	DaemonSets    int    `json:"daemonSets,omitempty"`
	// Build names the controller measured ("before", "after", ...:
	// CONFIGHASH_SCALE_LABEL).
	Build string `json:"build,omitempty"`
	// External: each workload's Secret is external (listed in
	// confighash.dev/external, not in the render-time hash), so a first
	// start writes one baseline per workload.
	External bool `json:"external,omitempty"`
	// ControllerArgs are the extra flags of the run (CONFIGHASH_SCALE_ARGS).
	ControllerArgs string `json:"controllerArgs,omitempty"`
	// Start-up: from process start to every workload reconciled in sync;
	// the writes (PATCH, PUT, POST, DELETE, less the permission check's
	// access reviews, which write nothing) and rollouts it made meanwhile.
	StartupSeconds  float64 `json:"startupSeconds"`
	StartupWrites   int     `json:"startupWrites"`
	StartupRollouts int     `json:"startupRollouts"`
	// StartupAccessReviews are the start-up permission check's requests.
	StartupAccessReviews int `json:"startupAccessReviews,omitempty"`
	// StartupReads are the GET requests (lists included) of the start-up.
	StartupReads int `json:"startupReads,omitempty"`
	// StartupBaselines are the external baselines written at start-up.
	StartupBaselines int `json:"startupBaselines,omitempty"`
	// Memory of the controller process after start-up and after the changes.
	HeapMB      float64 `json:"heapMB"`
	RSSMB       float64 `json:"rssMB"`
	HeapAfterMB float64 `json:"heapAfterMB"`
	RSSAfterMB  float64 `json:"rssAfterMB"`
	// Settled memory: heap in use and RSS right after the first garbage
	// collection that follows the changes (the runtime forces one within
	// two minutes), and the heap per workload, its configs included.
	HeapSettledMB float64 `json:"heapSettledMB,omitempty"`
	// HeapLiveSettledMB is the heap's allocated objects at that point
	// (go_memstats_heap_alloc_bytes): what is in use minus the free slots
	// of partly used spans.
	HeapLiveSettledMB float64 `json:"heapLiveSettledMB,omitempty"`
	RSSSettledMB      float64 `json:"rssSettledMB,omitempty"`
	HeapPerWorkloadKB float64 `json:"heapPerWorkloadKB,omitempty"`
	RSSPerWorkloadKB  float64 `json:"rssPerWorkloadKB,omitempty"`
	// Latency of a roll beyond the coalescing window: from the config
	// update to the Deployment's watch event carrying the new hash.
	P50ms float64 `json:"p50ms"`
	P99ms float64 `json:"p99ms"`
	// API requests of the controller per change, by HTTP method (GET
	// includes lists), from its own client-go metrics.
	GetPerChange   float64 `json:"getPerChange"`
	PatchPerChange float64 `json:"patchPerChange"`
	PostPerChange  float64 `json:"postPerChange"`
}

// BenchmarkScale runs bin/confighash-controller as a process of its own
// against W workloads (Deployments, zero replicas), each consuming a key of
// its own ConfigMap, a whole second ConfigMap as a volume and a key of its
// own Secret: 2W ConfigMaps and W Secrets, rendered with the render-time
// hash. It reports start-up time and writes (target: none, nothing
// changed), the process's heap and RSS, roll latency beyond the coalescing
// window and the API requests per change. Scales come from
// CONFIGHASH_SCALE (default 5000); CONFIGHASH_SCALE_OUT appends each result
// as a JSON line for hack/scaleplot.
//
//	CONFIGHASH_SCALE=1000,2500,5000 CONFIGHASH_SCALE_OUT=/tmp/scale.jsonl \
//	  go test -run '^$' -bench BenchmarkScale -benchtime 1x -timeout 90m ./controller/
//
// CONFIGHASH_SCALE_SHAPE=realistic gives the workloads the shape of a
// chart's output (realisticPodSpec: an init container and three containers,
// 44 env entries, probes, resources, affinity, tolerations, eight volumes;
// about 10 KB each as the API server returns them), a tenth of them
// StatefulSets and a tenth DaemonSets (zero replicas; no node runs a
// DaemonSet's pods); CONFIGHASH_SCALE_PAYLOAD sets the size of each files
// ConfigMap (default 1024). CONFIGHASH_SCALE_BIN runs another build of the
// controller (e.g. one built from an earlier commit, to compare), and
// CONFIGHASH_SCALE_LABEL names it in the results.
//
// CONFIGHASH_SCALE_EXTERNAL=1 makes each workload's Secret external
// (confighash.dev/external), so the start is a first start on never-seen
// workloads: one baseline PATCH each. CONFIGHASH_SCALE_ARGS adds flags to
// the controller (space-separated, e.g. "--kube-api-qps 5 --kube-api-burst
// 10", client-go's own defaults). CONFIGHASH_SCALE_PROFILE=/tmp/heap saves
// the controller's heap profile, taken after the settled-memory reading
// (--pprof-bind-address, gc=1), as /tmp/heap-W.pb.gz.
func BenchmarkScale(b *testing.B) {
	var scales []int
	for _, s := range strings.Split(envString("CONFIGHASH_SCALE", "5000"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		require.NoError(b, err, "CONFIGHASH_SCALE")
		scales = append(scales, n)
	}
	changes := envInt("CONFIGHASH_SCALE_CHANGES", 100)
	for _, w := range scales {
		b.Run(strconv.Itoa(w), func(b *testing.B) {
			r := runScale(b, w, changes)
			b.ReportMetric(r.StartupSeconds, "startup-s")
			b.ReportMetric(float64(r.StartupWrites), "startup-writes")
			b.ReportMetric(float64(r.StartupBaselines), "startup-baselines")
			b.ReportMetric(r.HeapMB, "heap-MB")
			b.ReportMetric(r.HeapPerWorkloadKB, "heap-KB/workload")
			b.ReportMetric(r.RSSMB, "rss-MB")
			b.ReportMetric(r.P50ms, "p50-ms")
			b.ReportMetric(r.P99ms, "p99-ms")
			b.ReportMetric(r.GetPerChange, "get/change")
			b.ReportMetric(r.PatchPerChange, "patch/change")
			line, err := json.Marshal(r)
			require.NoError(b, err)
			b.Logf("%s", line)
			if out := os.Getenv("CONFIGHASH_SCALE_OUT"); out != "" {
				f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				require.NoError(b, err)
				_, err = f.Write(append(line, '\n'))
				require.NoError(b, err)
				require.NoError(b, f.Close())
			}
		})
	}
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

const (
	scaleWindow = 200 * time.Millisecond
	scalePoll   = 200 * time.Millisecond
)

func runScale(b *testing.B, w, changes int) ScaleResult {
	external := os.Getenv("CONFIGHASH_SCALE_EXTERNAL") == "1"
	extra := strings.Fields(os.Getenv("CONFIGHASH_SCALE_ARGS"))
	shape := scaleShape{realistic: os.Getenv("CONFIGHASH_SCALE_SHAPE") == "realistic", payload: envInt("CONFIGHASH_SCALE_PAYLOAD", 1024), external: external}
	e := newEnv(b)
	cfg := rest.CopyConfig(e.cfg)
	cfg.QPS, cfg.Burst = 2000, 4000
	cs := kubernetes.NewForConfigOrDie(cfg)
	created := time.Now()
	createScale(b, e.ns, cs, w, shape)
	b.Logf("%d workloads, %d ConfigMaps, %d Secrets created in %s", w, 2*w, w, time.Since(created).Round(time.Second))
	// Polled every 200ms: these waits read thousands of objects or a
	// controller's metrics.
	eventuallyWithin(b, 20*time.Minute, scalePoll, "kube-controller-manager to observe every workload", func(ctx context.Context) (bool, error) {
		return observedAll(ctx, cs, e.ns, w)
	})

	r := ScaleResult{Workloads: w, ConfigMaps: 2 * w, Secrets: w, Changes: changes, External: external, ControllerArgs: strings.Join(extra, " "),
		Shape: "minimal", PayloadBytes: shape.payload, Build: os.Getenv("CONFIGHASH_SCALE_LABEL")}
	for i := range w {
		switch shape.kind(i) {
		case "StatefulSet":
			r.StatefulSets++
		case "DaemonSet":
			r.DaemonSets++
		default:
			r.Deployments++
		}
	}
	if shape.realistic {
		r.Shape = "realistic"
		r.Secrets++ // the shared image pull Secret
	}
	raw, err := cs.AppsV1().RESTClient().Get().Namespace(e.ns).Resource("deployments").Name("app-0").DoRaw(context.Background())
	require.NoError(b, err)
	r.WorkloadBytes = len(raw)
	args := []string{"--coalesce-window", scaleWindow.String(), "--max-rollouts-per-second", "1000", "--rollout-burst", "1000", "--log-level", "info"}
	profile := os.Getenv("CONFIGHASH_SCALE_PROFILE")
	pprofAddr := ""
	p := e.startProcessArgs(os.Getenv("CONFIGHASH_SCALE_BIN"), "scale", func() []string {
		all := slices.Concat(args, extra)
		if profile != "" {
			// Picked again for each start, as the metrics address is.
			pprofAddr = kubetest.FreeAddr(b)
			all = append(all, "--pprof-bind-address", pprofAddr)
		}
		return all
	})
	start := time.Now()
	eventuallyWithin(b, 20*time.Minute, scalePoll, "every workload in sync", func(context.Context) (bool, error) {
		if external && p.metric("confighash_baseline_writes_total") < float64(w) {
			return false, nil
		}
		return p.metric("confighash_reconciles_total", `result="in_sync"`) >= float64(w), nil
	})
	r.StartupSeconds = time.Since(start).Seconds()
	writes := func() float64 {
		return p.metric("rest_client_requests_total", `method="PATCH"`) + p.metric("rest_client_requests_total", `method="PUT"`) +
			p.metric("rest_client_requests_total", `method="POST"`) + p.metric("rest_client_requests_total", `method="DELETE"`)
	}
	r.StartupAccessReviews = int(p.metric("confighash_access_reviews_total"))
	r.StartupWrites = int(writes()) - r.StartupAccessReviews
	r.StartupReads = int(p.metric("rest_client_requests_total", `method="GET"`))
	r.StartupRollouts = int(p.metric("confighash_rollouts_total"))
	r.StartupBaselines = int(p.metric("confighash_baseline_writes_total"))
	r.HeapMB = p.metric("go_memstats_heap_inuse_bytes") / 1e6
	r.RSSMB = p.metric("process_resident_memory_bytes") / 1e6

	get0, patch0, post0 := p.metric("rest_client_requests_total", `method="GET"`), p.metric("rest_client_requests_total", `method="PATCH"`),
		p.metric("rest_client_requests_total", `method="POST"`)
	var latencies []time.Duration
	for i := range changes {
		idx := (i * 7919) % w
		latencies = append(latencies, scaleChange(b, e.ns, cs, shape.kind(idx), idx, i))
	}
	// Each roll's Event is posted after its patch: wait for them all.
	eventuallyWithin(b, 2*time.Minute, scalePoll, "an Event per change", func(context.Context) (bool, error) {
		return p.metric("rest_client_requests_total", `method="POST"`)-post0 >= float64(changes), nil
	})
	per := func(now, before float64) float64 { return (now - before) / float64(changes) }
	r.GetPerChange = per(p.metric("rest_client_requests_total", `method="GET"`), get0)
	r.PatchPerChange = per(p.metric("rest_client_requests_total", `method="PATCH"`), patch0)
	r.PostPerChange = per(p.metric("rest_client_requests_total", `method="POST"`), post0)
	r.HeapAfterMB = p.metric("go_memstats_heap_inuse_bytes") / 1e6
	r.RSSAfterMB = p.metric("process_resident_memory_bytes") / 1e6
	// Settled memory: wait for a collection after the changes, then read.
	gc0 := p.metric("go_gc_duration_seconds_count")
	eventuallyWithin(b, 3*time.Minute, scalePoll, "a garbage collection after the changes", func(context.Context) (bool, error) {
		return p.metric("go_gc_duration_seconds_count") > gc0, nil
	})
	r.HeapSettledMB = p.metric("go_memstats_heap_inuse_bytes") / 1e6
	r.HeapLiveSettledMB = p.metric("go_memstats_heap_alloc_bytes") / 1e6
	r.RSSSettledMB = p.metric("process_resident_memory_bytes") / 1e6
	r.HeapPerWorkloadKB = r.HeapSettledMB * 1e3 / float64(w)
	r.RSSPerWorkloadKB = r.RSSSettledMB * 1e3 / float64(w)
	if profile != "" {
		saveHeapProfile(b, pprofAddr, fmt.Sprintf("%s-%d.pb.gz", profile, w))
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	q := func(f float64) float64 {
		return float64(latencies[int(f*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	r.P50ms, r.P99ms = q(0.5), q(0.99)
	p.signal(syscall.SIGTERM)
	return r
}

// saveHeapProfile writes the controller's heap profile, taken after a
// garbage collection (gc=1), to path, for go tool pprof.
func saveHeapProfile(b *testing.B, addr, path string) {
	b.Helper()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1") //nolint:noctx // a local test process
	require.NoError(b, err)
	defer func() { require.NoError(b, resp.Body.Close()) }()
	require.Equal(b, http.StatusOK, resp.StatusCode, "heap profile")
	body, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	require.NoError(b, os.WriteFile(path, body, 0o644))
	b.Logf("heap profile: %s", path)
}

// scaleChange edits workload idx's ConfigMap (even i) or Secret (odd i)
// and returns how long after the update, beyond the coalescing window, a
// watch on the workload (of kind) saw the new controller hash.
func scaleChange(b *testing.B, ns string, cs kubernetes.Interface, kind string, idx, i int) time.Duration {
	b.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("app-%d", idx)
	// Watch from the list's resourceVersion, the current one: the
	// workload's own may be older than the apiserver's watch cache holds.
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	var before, listRV string
	var wi watch.Interface
	var err error
	switch kind {
	case "StatefulSet":
		list, lerr := cs.AppsV1().StatefulSets(ns).List(ctx, opts)
		require.NoError(b, lerr)
		require.Len(b, list.Items, 1, name)
		before, listRV = list.Items[0].Spec.Template.Annotations["confighash.dev/controller-hash"], list.ResourceVersion
	case "DaemonSet":
		list, lerr := cs.AppsV1().DaemonSets(ns).List(ctx, opts)
		require.NoError(b, lerr)
		require.Len(b, list.Items, 1, name)
		before, listRV = list.Items[0].Spec.Template.Annotations["confighash.dev/controller-hash"], list.ResourceVersion
	default:
		list, lerr := cs.AppsV1().Deployments(ns).List(ctx, opts)
		require.NoError(b, lerr)
		require.Len(b, list.Items, 1, name)
		before, listRV = list.Items[0].Spec.Template.Annotations["confighash.dev/controller-hash"], list.ResourceVersion
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	opts.ResourceVersion = listRV
	switch kind {
	case "StatefulSet":
		wi, err = cs.AppsV1().StatefulSets(ns).Watch(wctx, opts)
	case "DaemonSet":
		wi, err = cs.AppsV1().DaemonSets(ns).Watch(wctx, opts)
	default:
		wi, err = cs.AppsV1().Deployments(ns).Watch(wctx, opts)
	}
	require.NoError(b, err)
	defer wi.Stop()
	var t0 time.Time
	if i%2 == 0 {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(b, err)
		cm.Data["LOG_LEVEL"] = fmt.Sprint("level-", i)
		t0 = time.Now()
		_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(b, err)
	} else {
		sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "creds-"+strconv.Itoa(idx), metav1.GetOptions{})
		require.NoError(b, err)
		sec.Data["password"] = []byte(fmt.Sprint("pw-", i))
		t0 = time.Now()
		_, err = cs.CoreV1().Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{})
		require.NoError(b, err)
	}
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			b.Fatalf("watch of %s %s: %v", kind, name, ev.Object)
		}
		var ann map[string]string
		switch got := ev.Object.(type) {
		case *appsv1.Deployment:
			ann = got.Spec.Template.Annotations
		case *appsv1.StatefulSet:
			ann = got.Spec.Template.Annotations
		case *appsv1.DaemonSet:
			ann = got.Spec.Template.Annotations
		}
		if h := ann["confighash.dev/controller-hash"]; h != "" && h != before {
			return time.Since(t0) - scaleWindow
		}
	}
	b.Fatalf("no roll of %s %s within two minutes", kind, name)
	return 0
}

// observedAll reports whether kube-controller-manager has observed the
// current generation of every one of the w workloads in ns.
func observedAll(ctx context.Context, cs kubernetes.Interface, ns string, w int) (bool, error) {
	var gens [][2]int64 // per workload: the observed generation, the current one
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, d := range deps.Items {
		gens = append(gens, [2]int64{d.Status.ObservedGeneration, d.Generation})
	}
	sts, err := cs.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, s := range sts.Items {
		gens = append(gens, [2]int64{s.Status.ObservedGeneration, s.Generation})
	}
	dss, err := cs.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, d := range dss.Items {
		gens = append(gens, [2]int64{d.Status.ObservedGeneration, d.Generation})
	}
	for _, g := range gens {
		if g[0] < g[1] {
			return false, nil
		}
	}
	return len(gens) == w, nil
}

// scaleShape is what createScale makes.
type scaleShape struct {
	realistic bool
	payload   int
	external  bool
}

// kind is the kind of workload i: realistic runs make every tenth workload
// a StatefulSet and the next a DaemonSet.
func (s scaleShape) kind(i int) string {
	if s.realistic {
		switch i % 10 {
		case 8:
			return "StatefulSet"
		case 9:
			return "DaemonSet"
		}
	}
	return "Deployment"
}

// createScale creates, for i in [0, w): ConfigMap app-i (LOG_LEVEL,
// OTHER), ConfigMap files-i (1 KiB), Secret creds-i (password, user), and
// Deployment app-i consuming app-i's LOG_LEVEL, all of files-i as a volume
// and creds-i's password, with the render-time hash a render would write.
// With external, creds-i is external: listed in confighash.dev/external and
// left out of the render-time hash, as a render without the Secret writes.
// A realistic shape uses realisticPodSpec and realisticWorkload instead,
// with app-i holding ten keys, creds-i also consumed through a projection,
// a shared image pull Secret and an optional, absent ConfigMap.
func createScale(b *testing.B, ns string, cs kubernetes.Interface, w int, shape scaleShape) {
	external := shape.external
	b.Helper()
	ctx := context.Background()
	payload := strings.Repeat("x", shape.payload)
	zero := int32(0)
	registry := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.invalid":{"auth":"dXNlcjpwYXNz"}}}`)}}
	var registryContent hashing.Content
	if shape.realistic {
		_, err := cs.CoreV1().Secrets(ns).Create(ctx, registry, metav1.CreateOptions{})
		require.NoError(b, err)
		registryContent, err = controller.ContentOf(registry)
		require.NoError(b, err)
	}
	create := func(i int) error {
		name, files, creds := fmt.Sprintf("app-%d", i), fmt.Sprintf("files-%d", i), fmt.Sprintf("creds-%d", i)
		objs := []struct {
			kind hashing.Kind
			name string
			obj  any
		}{
			{hashing.KindConfigMap, name, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: envData(shape.realistic)}},
			{hashing.KindConfigMap, files, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: files}, Data: map[string]string{"config.yaml": payload}}},
			{hashing.KindSecret, creds, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: creds}, Data: map[string][]byte{"password": []byte("pw"), "user": []byte("app")}}},
		}
		contents := map[string]hashing.Content{"Secret/registry": registryContent}
		for _, o := range objs {
			var err error
			var content hashing.Content
			switch obj := o.obj.(type) {
			case *corev1.ConfigMap:
				if _, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, obj, metav1.CreateOptions{}); err == nil {
					content, err = controller.ContentOf(obj)
				}
			case *corev1.Secret:
				if _, err = cs.CoreV1().Secrets(ns).Create(ctx, obj, metav1.CreateOptions{}); err == nil {
					content, err = controller.ContentOf(obj)
				}
			}
			if err != nil {
				return err
			}
			contents[string(o.kind)+"/"+o.name] = content
		}
		labels := map[string]string{"app": name}
		spec := corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.invalid/app:1",
				Env: []corev1.EnvVar{
					{Name: "LOG_LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "LOG_LEVEL"}}},
					{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: creds}, Key: "password"}}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "files", MountPath: "/etc/app"}},
			}},
			Volumes: []corev1.Volume{{Name: "files", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: files}}}}},
		}
		lookup := func(k hashing.Kind, n string) (hashing.Content, bool) {
			c, ok := contents[string(k)+"/"+n]
			return c, ok
		}
		if shape.realistic {
			spec = realisticPodSpec(i, realisticRefs{Env: name, Files: files, Creds: creds, Registry: "registry", Cluster: "cluster"})
		}
		uses := hashing.Discover(&spec)
		annotations := map[string]string{}
		if external {
			annotations["confighash.dev/external"] = "Secret/" + creds
			var inStream []hashing.Use
			for _, u := range uses {
				if u.Kind != hashing.KindSecret {
					inStream = append(inStream, u)
				}
			}
			uses = inStream
		}
		renderHash := hashing.Compute(ns, uses, lookup, hashing.Options{})
		if shape.realistic {
			wl := realisticWorkload(shape.kind(i), name, i, spec, annotations, map[string]string{"confighash.dev/hash": renderHash})
			wl.SetNamespace(ns)
			var err error
			switch o := wl.(type) {
			case *appsv1.Deployment:
				_, err = cs.AppsV1().Deployments(ns).Create(ctx, o, metav1.CreateOptions{FieldManager: "helm"})
			case *appsv1.StatefulSet:
				_, err = cs.AppsV1().StatefulSets(ns).Create(ctx, o, metav1.CreateOptions{FieldManager: "helm"})
			case *appsv1.DaemonSet:
				_, err = cs.AppsV1().DaemonSets(ns).Create(ctx, o, metav1.CreateOptions{FieldManager: "helm"})
			}
			return err
		}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
			Spec: appsv1.DeploymentSpec{
				Replicas: &zero,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"confighash.dev/hash": renderHash}},
					Spec:       spec,
				},
			},
		}
		_, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		return err
	}
	require.NoError(b, kubetest.Parallel(w, 32, create))
}

// envData is the content of ConfigMap app-i: the consumed LOG_LEVEL and
// OTHER, and for a realistic workload eight keys nobody consumes.
func envData(realistic bool) map[string]string {
	d := map[string]string{"LOG_LEVEL": "info", "OTHER": "x"}
	if realistic {
		for k := range 8 {
			d[fmt.Sprintf("UNUSED_%d", k)] = fmt.Sprintf("value-%d", k)
		}
	}
	return d
}
