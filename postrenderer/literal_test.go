package postrenderer_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// TestHelmVersionsHashWhatTheyInstall pins down what docs/helm.md says about
// Helm 3 and Helm 4. A template whose output ends inside a literal block,
// with no final newline (as the prometheus chart's does), reaches Helm 3's
// post-renderer with a newline after it ("rules: |" holding "{}\n"), while
// Helm 4 parses and re-serialises the output first ("|-" holding "{}"). The
// two versions then install different bytes, so their hashes differ; each is
// the hash of what that Helm installs, which is what the controller computes
// from the live object.
func TestHelmVersionsHashWhatTheyInstall(t *testing.T) {
	const (
		deployment = "Deployment//web-server"
		configMap  = "ConfigMap//web-rules"
	)
	chart := filepath.Join(testtools.RepoRoot(t), "postrenderer", "testdata", "literal")
	h3, h4 := newHelm(t, 3), newHelm(t, 4)

	out3 := testtools.Objects(t, h3.template(t, chart, true))
	out4 := testtools.Objects(t, h4.template(t, chart, true))
	rules := func(objs map[string]*yaml.RNode) string {
		cm, ok := objs[configMap]
		if !ok {
			t.Fatalf("no %s in the output", configMap)
		}
		return cm.GetDataMap()["rules"]
	}
	if got := rules(out3); got != "{}\n" {
		t.Errorf("helm3 installs rules %q, want %q", got, "{}\n")
	}
	if got := rules(out4); got != "{}" {
		t.Errorf("helm4 installs rules %q, want %q (if Helm 4 stopped re-serialising literal blocks, docs/helm.md must say the hashes agree again)", got, "{}")
	}

	hash3, hash4 := hashes(out3)[deployment], hashes(out4)[deployment]
	if hash3 == "" || hash4 == "" {
		t.Fatalf("missing hash: helm3 %q, helm4 %q", hash3, hash4)
	}
	if hash3 == hash4 {
		t.Errorf("helm3 and helm4 give the same hash %q for different installed content", hash3)
	}
	// Each hash is the KRM function's hash of the objects that Helm installs.
	for name, tc := range map[string]struct {
		objs map[string]*yaml.RNode
		hash string
	}{"helm3": {out3, hash3}, "helm4": {out4, hash4}} {
		stream := ""
		for _, n := range tc.objs {
			stream += "---\n" + n.MustString()
		}
		if want := krmHashes(t, h3.confighash, stream)[deployment]; tc.hash != want {
			t.Errorf("%s: hash %q, KRM function over the installed objects %q", name, tc.hash, want)
		}
	}
}

// TestHelmInstallsWhatWasHashed installs a chart with Helm 3 and Helm 4 and
// confighash into a real API server, and checks each workload's hash against
// the KRM function's hash of the objects as they were stored. Its ConfigMaps
// end inside a block scalar that keeps its blank lines (|+, >+: what
// .Files.Glob's AsConfig writes for a file ending in a blank line), one of
// them before a comment; Helm 4 writes its post-renderer's output anew
// before it installs it, which adds blank lines to such a block. Another
// merges its anchored annotations and labels into its data: Helm 4 adds its
// postrender-filename annotation to the anchored map, so the post-renderer
// sees one more key there than Helm 4 stores.
func TestHelmInstallsWhatWasHashed(t *testing.T) {
	kubeconfig, client := startControlPlane(t)
	chart := filepath.Join(testtools.RepoRoot(t), "postrenderer", "testdata", "keep-chomped")
	for _, version := range []int{3, 4} {
		t.Run(fmt.Sprintf("helm%d", version), func(t *testing.T) {
			h := newHelm(t, version)
			h.Env = append(h.Env, "KUBECONFIG="+kubeconfig)
			name := fmt.Sprintf("web%d", version)
			args := append([]string{"install", name, chart, "--namespace", namespace, "--create-namespace"}, h.postRenderer()...)
			if res := h.Run(t, nil, args...); res.ExitCode != 0 {
				t.Fatalf("helm install: exit %d\n%s", res.ExitCode, res.Stderr)
			}
			stream := liveStream(t, client, name)
			want := krmHashes(t, h.confighash, stream)
			hook := "CronJob/" + namespace + "/" + name + "-report"
			if version == 3 {
				delete(want, hook) // Helm 3 does not send hooks to its post-renderer
			}
			if want["Deployment/"+namespace+"/"+name+"-server"] == "" {
				t.Fatalf("the KRM function hashed no Deployment of the release: %v", want)
			}
			assertByWorkload(t, h.String(), hashes(testtools.Objects(t, stream)), want)
		})
	}
}

// liveStream reads the release's ConfigMaps, Deployment and CronJob from the
// API server and writes them as one YAML stream.
func liveStream(t *testing.T, client kubernetes.Interface, release string) string {
	t.Helper()
	ctx := t.Context()
	var objs []any
	for _, cm := range []string{release + "-files", release + "-notes", release + "-merged", release + "-report", release + "-crlf"} {
		o, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, cm, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		o.APIVersion, o.Kind = "v1", "ConfigMap"
		objs = append(objs, o)
	}
	d, err := client.AppsV1().Deployments(namespace).Get(ctx, release+"-server", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.APIVersion, d.Kind = "apps/v1", "Deployment"
	c, err := client.BatchV1().CronJobs(namespace).Get(ctx, release+"-report", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.APIVersion, c.Kind = "batch/v1", "CronJob"
	var b strings.Builder
	for _, o := range append(objs, d, c) {
		y, err := sigsyaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n" + string(y))
	}
	return b.String()
}
