package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
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
)

// ScaleResult is one row of the scale benchmark; hack/scaleplot draws them.
type ScaleResult struct {
	Workloads  int `json:"workloads"`
	ConfigMaps int `json:"configMaps"`
	Secrets    int `json:"secrets"`
	Changes    int `json:"changes"`
	// External: each workload's Secret is external (listed in
	// confighash.dev/external, not in the render-time hash), so a first
	// start writes one baseline per workload.
	External bool `json:"external,omitempty"`
	// ControllerArgs are the extra flags of the run (CONFIGHASH_SCALE_ARGS).
	ControllerArgs string `json:"controllerArgs,omitempty"`
	// Start-up: from process start to every workload reconciled in sync;
	// the writes (PATCH, PUT, POST, DELETE) and rollouts it made meanwhile.
	StartupSeconds  float64 `json:"startupSeconds"`
	StartupWrites   int     `json:"startupWrites"`
	StartupRollouts int     `json:"startupRollouts"`
	// StartupReads are the GET requests (lists included) of the start-up.
	StartupReads int `json:"startupReads,omitempty"`
	// StartupBaselines are the external baselines written at start-up.
	StartupBaselines int `json:"startupBaselines,omitempty"`
	// Memory of the controller process after start-up and after the changes.
	HeapMB      float64 `json:"heapMB"`
	RSSMB       float64 `json:"rssMB"`
	HeapAfterMB float64 `json:"heapAfterMB"`
	RSSAfterMB  float64 `json:"rssAfterMB"`
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
// CONFIGHASH_SCALE_EXTERNAL=1 makes each workload's Secret external
// (confighash.dev/external), so the start is a first start on never-seen
// workloads: one baseline PATCH each. CONFIGHASH_SCALE_ARGS adds flags to
// the controller (space-separated, e.g. "--kube-api-qps 5 --kube-api-burst
// 10", client-go's own defaults).
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
	e := newEnv(b)
	cfg := rest.CopyConfig(e.cfg)
	cfg.QPS, cfg.Burst = 2000, 4000
	cs := kubernetes.NewForConfigOrDie(cfg)
	created := time.Now()
	createScale(b, e.ns, cs, w, external)
	b.Logf("%d workloads, %d ConfigMaps, %d Secrets created in %s", w, 2*w, w, time.Since(created).Round(time.Second))
	// Polled every 200ms: these waits read thousands of objects or a
	// controller's metrics.
	eventuallyWithin(b, 20*time.Minute, scalePoll, "the Deployment controller to observe every Deployment", func(ctx context.Context) (bool, error) {
		list, err := cs.AppsV1().Deployments(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, d := range list.Items {
			if d.Status.ObservedGeneration < d.Generation {
				return false, nil
			}
		}
		return len(list.Items) == w, nil
	})

	r := ScaleResult{Workloads: w, ConfigMaps: 2 * w, Secrets: w, Changes: changes, External: external, ControllerArgs: strings.Join(extra, " ")}
	p := e.startProcess("scale", append([]string{"--coalesce-window", scaleWindow.String(), "--max-rollouts-per-second", "1000",
		"--rollout-burst", "1000", "--log-level", "info"}, extra...)...)
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
	r.StartupWrites = int(writes())
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
		latencies = append(latencies, scaleChange(b, e.ns, cs, idx, i))
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
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	q := func(f float64) float64 {
		return float64(latencies[int(f*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	r.P50ms, r.P99ms = q(0.5), q(0.99)
	p.signal(syscall.SIGTERM)
	return r
}

// scaleChange edits workload idx's ConfigMap (even i) or Secret (odd i)
// and returns how long after the update, beyond the coalescing window, a
// watch on the Deployment saw the new controller hash.
func scaleChange(b *testing.B, ns string, cs kubernetes.Interface, idx, i int) time.Duration {
	b.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("app-%d", idx)
	// Watch from the list's resourceVersion, the current one: the
	// Deployment's own may be older than the apiserver's watch cache holds.
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
	require.NoError(b, err)
	require.Len(b, list.Items, 1, name)
	before := list.Items[0].Spec.Template.Annotations["confighash.dev/controller-hash"]
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	wi, err := cs.AppsV1().Deployments(ns).Watch(wctx, metav1.ListOptions{FieldSelector: selector, ResourceVersion: list.ResourceVersion})
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
			b.Fatalf("watch of %s: %v", name, ev.Object)
		}
		if got, ok := ev.Object.(*appsv1.Deployment); ok {
			if h := got.Spec.Template.Annotations["confighash.dev/controller-hash"]; h != "" && h != before {
				return time.Since(t0) - scaleWindow
			}
		}
	}
	b.Fatalf("no roll of %s within two minutes", name)
	return 0
}

// createScale creates, for i in [0, w): ConfigMap app-i (LOG_LEVEL,
// OTHER), ConfigMap files-i (1 KiB), Secret creds-i (password, user), and
// Deployment app-i consuming app-i's LOG_LEVEL, all of files-i as a volume
// and creds-i's password, with the render-time hash a render would write.
// With external, creds-i is external: listed in confighash.dev/external and
// left out of the render-time hash, as a render without the Secret writes.
func createScale(b *testing.B, ns string, cs kubernetes.Interface, w int, external bool) {
	b.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var mu sync.Mutex
	var firstErr error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	payload := strings.Repeat("x", 1024)
	zero := int32(0)
	for i := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			name, files, creds := fmt.Sprintf("app-%d", i), fmt.Sprintf("files-%d", i), fmt.Sprintf("creds-%d", i)
			objs := []struct {
				kind hashing.Kind
				name string
				obj  any
			}{
				{hashing.KindConfigMap, name, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"LOG_LEVEL": "info", "OTHER": "x"}}},
				{hashing.KindConfigMap, files, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: files}, Data: map[string]string{"config.yaml": payload}}},
				{hashing.KindSecret, creds, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: creds}, Data: map[string][]byte{"password": []byte("pw"), "user": []byte("app")}}},
			}
			contents := map[string]hashing.Content{}
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
					fail(err)
					return
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
			if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	require.NoError(b, firstErr)
}
