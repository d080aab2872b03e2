package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/controllercmd"
	"github.com/confighash/confighash/internal/testing/kubetest"
)

// BenchmarkCacheMemory caches N ConfigMaps and N Secrets of one payload size
// twice in the same run: through the controller's cache options (digests)
// and through a plain controller-runtime cache (full objects), and reports
// the heap each holds and their ratio. Target: ratio <= 0.25, and the
// digest cache flat when payloads grow.
//
//	go test -run '^$' -bench BenchmarkCacheMemory -benchtime 1x ./controller/
func BenchmarkCacheMemory(b *testing.B) {
	n := envInt("CONFIGHASH_BENCH_OBJECTS", 250)
	empty := newEnv(b).ns
	for _, size := range []int{1 << 10, 4 << 10, 16 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("payload=%dKiB", size>>10), func(b *testing.B) {
			e := newEnv(b)
			populate(b, e, n, size)
			digestOpts := func(ns string) cache.Options {
				return controller.CacheOptions(controller.Options{Namespaces: []string{ns}})
			}
			fullOpts := func(ns string) cache.Options {
				return cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}
			}
			// The heap a cache adds for the objects: a cache of the populated
			// namespace minus one of an empty namespace (clients, discovery
			// and informers cost the same in both).
			var digest, full float64
			for i := 0; i < b.N; i++ {
				digest = cacheHeap(b, e, digestOpts(e.ns)) - cacheHeap(b, e, digestOpts(empty))
				full = cacheHeap(b, e, fullOpts(e.ns)) - cacheHeap(b, e, fullOpts(empty))
			}
			objs := float64(2 * n)
			b.ReportMetric(digest/objs, "digest-B/obj")
			b.ReportMetric(full/objs, "full-B/obj")
			b.ReportMetric(digest/full, "ratio")
			b.Logf("%d ConfigMaps + %d Secrets, 4 keys, %d KiB each: digest cache %.0f KiB (%.0f B/object), full cache %.0f KiB (%.0f B/object), ratio %.3f",
				n, n, size>>10, digest/1024, digest/objs, full/1024, full/objs, digest/full)
		})
	}
}

// populate creates n ConfigMaps and n Secrets, each with four keys sharing
// size bytes, applied with a field manager (managedFields, like real ones).
func populate(b *testing.B, e *env, n, size int) {
	b.Helper()
	ctx := context.Background()
	value := func(i, k int) string {
		unit := fmt.Sprintf("%d-%d-", i, k)
		return strings.Repeat(unit, size/4/len(unit)+1)[:size/4]
	}
	err := kubetest.Parallel(n, 16, func(i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Labels: map[string]string{"app": "bench"}}, Data: map[string]string{}}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i), Labels: map[string]string{"app": "bench"}}, Data: map[string][]byte{}}
		for k := 0; k < 4; k++ {
			cm.Data[fmt.Sprintf("key-%d", k)] = value(i, k)
			s.Data[fmt.Sprintf("key-%d", k)] = []byte(value(i, k))
		}
		if _, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
			return err
		}
		_, err := e.cs.CoreV1().Secrets(e.ns).Create(ctx, s, metav1.CreateOptions{FieldManager: "helm"})
		return err
	})
	require.NoError(b, err)
}

// cacheHeap starts a cache of ConfigMaps and Secrets with opts, waits for
// it to hold every object, and returns the heap it added.
func cacheHeap(b *testing.B, e *env, opts cache.Options) float64 {
	b.Helper()
	before := heapInUse()
	c, err := cache.New(e.cfg, opts)
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.GetInformer(ctx, &corev1.Secret{}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("cache did not sync")
	}
	after := heapInUse()
	// Keep the cache reachable until after the measurement.
	var cms corev1.ConfigMapList
	require.NoError(b, c.List(ctx, &cms))
	runtime.KeepAlive(c)
	return float64(after) - float64(before)
}

func heapInUse() uint64 {
	var m runtime.MemStats
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkRolloutLatency manages many Deployments (1,000 by default; zero
// replicas, so no Pods), each consuming its own ConfigMap, then edits
// ConfigMaps one at a time and measures the time from the update to the
// workload patch, beyond the coalescing window; it counts the API requests
// the controller makes per change through a wrapped transport.
// Targets: p50 <= 100ms, p99 <= 1s; no GET or LIST per change; one PATCH
// per affected workload.
//
//	go test -run '^$' -bench BenchmarkRolloutLatency -benchtime 1x ./controller/
func BenchmarkRolloutLatency(b *testing.B) {
	workloads := envInt("CONFIGHASH_BENCH_WORKLOADS", 1000)
	changes := envInt("CONFIGHASH_BENCH_CHANGES", 100)
	const window = 200 * time.Millisecond
	e := newEnv(b)
	ctx := context.Background()
	createWorkloads(b, e, workloads)

	counter := &requestCounter{counts: map[string]int{}}
	cfg := rest.CopyConfig(e.cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return counter.wrap(rt) }
	opts := e.testOptions()
	opts.RESTConfig, opts.CoalesceWindow = cfg, window
	opts.RolloutsPerSecond, opts.RolloutBurst = 1000, 1000
	r := e.startLogging(opts, controllercmd.LogLevelInfo)
	start := time.Now()
	eventually(b, "every workload in sync", func(context.Context) (bool, error) {
		return r.metric("confighash_reconciles_total", map[string]string{"result": "in_sync"}) >= float64(workloads), nil
	})
	b.Logf("%d workloads in sync %s after start", workloads, time.Since(start).Round(time.Millisecond))

	counter.reset()
	var latencies []time.Duration
	b.ResetTimer()
	for i := 0; i < changes; i++ {
		name := fmt.Sprintf("app-%d", (i*7919)%workloads)
		cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(b, err)
		cm.Data["LOG_LEVEL"] = fmt.Sprintf("level-%d", i)
		mark := r.obs.mark()
		t0 := time.Now()
		_, err = e.cs.CoreV1().ConfigMaps(e.ns).Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(b, err)
		_, next := r.obs.waitFor(b, mark, "the roll of "+name, func(o controller.Outcome) bool {
			return o.Request.Name == name && o.Result == "rolled"
		})
		latencies = append(latencies, r.obs.at(next-1).Sub(t0)-window)
	}
	b.StopTimer()
	// The Event of each roll is posted after the patch: wait for all of them
	// before counting requests.
	eventually(b, "an Event per change", func(context.Context) (bool, error) {
		return counter.snapshot()["POST events"] >= changes, nil
	})
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	p := func(q float64) time.Duration { return latencies[int(q*float64(len(latencies)-1))] }
	b.ReportMetric(float64(p(0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
	counts := counter.snapshot()
	perChange := func(k string) float64 { return float64(counts[k]) / float64(changes) }
	b.ReportMetric(perChange("GET deployments")+perChange("GET configmaps")+perChange("LIST deployments")+perChange("LIST configmaps")+perChange("LIST secrets")+perChange("GET secrets"), "get+list/change")
	b.ReportMetric(perChange("PATCH deployments"), "patches/change")
	b.Logf("%d workloads, %d changes: p50 %s, p99 %s beyond the %s window; requests: %v",
		workloads, changes, p(0.5), p(0.99), window, counts)
}

// createWorkloads creates n ConfigMaps and n Deployments (zero replicas),
// Deployment i consuming key LOG_LEVEL of ConfigMap app-i, with the
// render-time hash a render would have written.
func createWorkloads(b testing.TB, e *env, n int) {
	b.Helper()
	ctx := context.Background()
	err := kubetest.Parallel(n, 16, func(i int) error {
		name := fmt.Sprintf("app-%d", i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"LOG_LEVEL": "info", "OTHER": "x"}}
		if _, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
		content, err := controller.ContentOf(cm)
		if err != nil {
			return err
		}
		use := hashing.Use{Kind: hashing.KindConfigMap, Name: name, Keys: []string{"LOG_LEVEL"}}
		renderHash := hashing.Compute(e.ns, []hashing.Use{use}, func(hashing.Kind, string) (hashing.Content, bool) { return content, true }, hashing.Options{})
		d := kubetest.Deployment(name, 0, []corev1.EnvVar{kubetest.KeyRef(name, "LOG_LEVEL")}, nil)
		d.Spec.Template.Annotations = map[string]string{"confighash.dev/hash": renderHash}
		_, err = e.cs.AppsV1().Deployments(e.ns).Create(ctx, d, metav1.CreateOptions{})
		return err
	})
	require.NoError(b, err)
}

// requestCounter counts API requests by verb and resource.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		c.mu.Lock()
		c.counts[requestKey(req)]++
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (c *requestCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = map[string]int{}
}

func (c *requestCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// requestKey is "VERB resource": GET of a collection is LIST, with
// watch=true WATCH.
func requestKey(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	resource, named := "", false
	for i := 0; i < len(parts); i++ {
		if parts[i] == "namespaces" && i+2 < len(parts) {
			resource, named = parts[i+2], i+3 < len(parts)
			break
		}
	}
	if resource == "" && len(parts) > 0 {
		resource = parts[len(parts)-1]
	}
	verb := req.Method
	switch {
	case verb == http.MethodGet && req.URL.Query().Get("watch") == "true":
		verb = "WATCH"
	case verb == http.MethodGet && !named:
		verb = "LIST"
	}
	return verb + " " + resource
}
