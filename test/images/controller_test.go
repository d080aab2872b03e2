package images

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
)

// waitTimeout bounds every poll on a shared, busy machine.
const waitTimeout = 90 * time.Second

// stopWithin is how long the controller may take to stop on SIGTERM.
const stopWithin = 10 * time.Second

// app is the workload the controller test renders and applies: a
// Deployment reading one key of a ConfigMap.
func app() string {
	return `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
data:
  LOG_LEVEL: info
---
` + kubetest.Workload{Name: "web", Replicas: 1, Env: []string{kubetest.EnvKey("app-config", "LOG_LEVEL")}}.YAML()
}

// TestControllerImage runs the controller image against the local control
// plane as a cluster would run it: its own user (65532), a read-only root
// filesystem, no capabilities, the kubeconfig mounted read-only. An
// out-of-band edit of the ConfigMap rolls the workload exactly once (a
// second ReplicaSet), and the container stops cleanly on SIGTERM.
func TestControllerImage(t *testing.T) {
	img := requireImages(t)
	cp := cptest.Private(t)
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	ctx := context.Background()

	ns := fmt.Sprintf("imagetest-%04x", rand.IntN(1<<16))
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}

	// Render with the function image (as a Helm post-renderer would run it)
	// and apply.
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	rendered, stderr, err := img.run(rctx, []byte(app()), "run", "--rm", "-i", "--network", "none", img.function, "--namespace", ns)
	cancel()
	if err != nil {
		t.Fatalf("render with %s: %v: %s", img.function, err, stderr)
	}
	cm, deploy := decodeApp(t, rendered)
	if deploy.Spec.Template.Annotations["confighash.dev/hash"] == "" {
		t.Fatalf("the rendered Deployment has no hash:\n%s", rendered)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ConfigMap %s/%s: %v", ns, cm.Name, err)
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Deployment %s/%s: %v", ns, deploy.Name, err)
	}
	if n := replicaSets(t, cs, ns, deploy.Name); n != 1 {
		t.Fatalf("%d ReplicaSets before the controller started, want 1", n)
	}

	c := startController(t, img, cp.KubeconfigPath(), ns)
	c.waitMetric(t, "the workload in sync", "confighash_reconciles_total", `result="in_sync"`, func(v float64) bool { return v >= 1 })
	if n := replicaSets(t, cs, ns, deploy.Name); n != 1 {
		t.Fatalf("%d ReplicaSets after the controller started on an unchanged render, want 1", n)
	}

	// The out-of-band edit (kubectl edit).
	inSync := c.metric("confighash_reconciles_total", `result="in_sync"`)
	if _, err := kubetest.Edit(ctx, cs.CoreV1().ConfigMaps(ns), cm.Name, "", func(live *corev1.ConfigMap) { live.Data["LOG_LEVEL"] = "debug" }); err != nil {
		t.Fatalf("edit ConfigMap in %s: %v", ns, err)
	}
	c.waitMetric(t, "one rollout", "confighash_rollouts_total", `dry_run="false"`, func(v float64) bool { return v >= 1 })
	eventually(t, "the second ReplicaSet", func() bool { return replicaSets(t, cs, ns, deploy.Name) >= 2 })
	// Let the controller see its own rollout and settle: past the coalescing
	// window, nothing more may roll.
	c.waitMetric(t, "in sync after the rollout", "confighash_reconciles_total", `result="in_sync"`, func(v float64) bool { return v > inSync })
	time.Sleep(3 * coalesceWindow)
	if n := replicaSets(t, cs, ns, deploy.Name); n != 2 {
		t.Errorf("%d ReplicaSets after one out-of-band edit, want 2 (exactly one rollout)", n)
	}
	if v := c.metric("confighash_rollouts_total", `dry_run="false"`); v != 1 {
		t.Errorf("confighash_rollouts_total = %v, want 1", v)
	}

	// SIGTERM: `stop` sends it and waits; the controller must exit on its
	// own, well before the engine would kill it.
	begin := time.Now()
	img.must(t, "stop", "--time", strconv.Itoa(int(2*stopWithin/time.Second)), c.name)
	took := time.Since(begin)
	code := strings.TrimSpace(img.must(t, "inspect", "--format", "{{.State.ExitCode}}", c.name))
	if code != "0" && code != "143" {
		t.Errorf("exit code after SIGTERM = %s, want 0 (or 143)", code)
	}
	if took > stopWithin {
		t.Errorf("the container took %s to stop on SIGTERM, want under %s", took, stopWithin)
	}
	logs := c.logs(t)
	if !shutdownLog.MatchString(logs) {
		t.Errorf("the logs do not say the controller shut down (want %s):\n%s", shutdownLog, logs)
	}
	t.Logf("stopped on SIGTERM in %s, exit code %s, logging %q", took.Round(time.Millisecond), code, shutdownLog.FindString(logs))
}

// coalesceWindow is the controller's coalescing window in this test.
const coalesceWindow = 1500 * time.Millisecond

// shutdownLog is the last thing controller-runtime's manager logs when it
// has stopped every runnable after a signal (a clean shutdown).
var shutdownLog = regexp.MustCompile(`Wait completed, proceeding to shutdown the manager`)

// controllerContainer is the controller image running in the engine.
type controllerContainer struct {
	img     *images
	name    string
	metrics string
}

// startController runs the controller image on namespace ns.
func startController(t *testing.T, img *images, kubeconfig, ns string) *controllerContainer {
	t.Helper()
	// The kubeconfig is mounted read-only; UID 65532 must be able to read it.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		err = os.Chown(kc, 65532, 65532)
	} else {
		err = os.Chmod(kc, 0o644) // a rootless engine maps 65532 to a subordinate UID
	}
	if err != nil {
		t.Fatal(err)
	}

	// The engine shares the host's network: a port found free may be taken
	// before the controller binds it (kubetest.StartServer); then it runs
	// again on another.
	return kubetest.WhileAddressTaken(t, "the controller container", func() (*controllerContainer, bool, string) {
		c := runController(t, img, kc, ns)
		return c, c.serves(t), c.logs(t)
	})
}

// runController runs one controller container on a free metrics address.
func runController(t *testing.T, img *images, kc, ns string) *controllerContainer {
	t.Helper()
	c := &controllerContainer{img: img, name: fmt.Sprintf("confighash-imagetest-%04x", rand.IntN(1<<16)), metrics: kubetest.FreeAddr(t)}
	img.must(t, "run", "-d", "--name", c.name,
		"--network", "host",
		"--read-only",
		"--user", "65532:65532",
		"--cap-drop", "ALL",
		"--security-opt", "no-new-privileges",
		"-v", kc+":/etc/confighash/kubeconfig:ro",
		img.controller,
		"--kubeconfig", "/etc/confighash/kubeconfig",
		"--namespaces", ns,
		"--metrics-bind-address", c.metrics,
		"--health-probe-bind-address", "0",
		"--coalesce-window", coalesceWindow.String(),
		"--min-roll-interval", "0s",
		"--log-format", "text",
	)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller container %s logs:\n%s", c.name, c.logs(t))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _, _ = img.run(ctx, nil, "rm", "-f", c.name)
	})
	return c
}

// serves polls the container's logs until the controller says it serves
// metrics (true; not the address answering, which whoever took the port
// may do) or the container stops (false), for at most waitTimeout.
func (c *controllerContainer) serves(t *testing.T) bool {
	t.Helper()
	serving := false
	eventually(t, "the controller container serving or stopped", func() bool {
		running := strings.TrimSpace(c.img.must(t, "inspect", "--format", "{{.State.Running}}", c.name)) == "true"
		serving = strings.Contains(c.logs(t), kubetest.MetricsServing)
		return serving || !running
	})
	return serving
}

// logs returns what the container wrote to stdout and stderr.
func (c *controllerContainer) logs(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, stderr, err := c.img.run(ctx, nil, "logs", c.name)
	if err != nil {
		return fmt.Sprintf("(logs: %v: %s)", err, stderr)
	}
	return out + stderr
}

// metric scrapes the controller's /metrics and sums the samples of name
// whose labels contain label; -1 when the endpoint does not answer.
func (c *controllerContainer) metric(name, label string) float64 {
	return kubetest.Metric(c.metrics, name, label)
}

func (c *controllerContainer) waitMetric(t *testing.T, what, name, label string, cond func(float64) bool) {
	t.Helper()
	eventually(t, what, func() bool { return cond(c.metric(name, label)) })
}

// eventually polls cond until it holds or waitTimeout passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	kubetest.EventuallyTrue(t, waitTimeout, 100*time.Millisecond, what, cond)
}

// replicaSets waits until the Deployment's controller has observed its
// latest spec, then counts the ReplicaSets it owns: one, plus one per
// rollout.
func replicaSets(t *testing.T, cs kubernetes.Interface, ns, name string) int {
	t.Helper()
	ctx := context.Background()
	var uid types.UID
	eventually(t, "Deployment "+name+" observed by its controller", func() bool {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		uid = d.UID
		return d.Generation > 0 && d.Status.ObservedGeneration >= d.Generation
	})
	owned, err := kubetest.OwnedReplicaSets(ctx, cs, ns, uid)
	if err != nil {
		t.Fatal(err)
	}
	return len(owned)
}

// decodeApp reads the rendered ConfigMap and Deployment.
func decodeApp(t *testing.T, stream string) (*corev1.ConfigMap, *appsv1.Deployment) {
	t.Helper()
	var docs []string
	for _, doc := range strings.Split("\n"+stream, "\n---\n") {
		if strings.TrimSpace(doc) != "" {
			docs = append(docs, doc)
		}
	}
	if len(docs) != 2 {
		t.Fatalf("the render has %d documents, want 2:\n%s", len(docs), stream)
	}
	var cm corev1.ConfigMap
	var d appsv1.Deployment
	if err := yaml.Unmarshal([]byte(docs[0]), &cm); err != nil {
		t.Fatalf("rendered ConfigMap: %v", err)
	}
	if err := yaml.Unmarshal([]byte(docs[1]), &d); err != nil {
		t.Fatalf("rendered Deployment: %v", err)
	}
	return &cm, &d
}
