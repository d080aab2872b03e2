package postrenderer_test

import (
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

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

	out3 := objects(t, h3.template(t, chart, true))
	out4 := objects(t, h4.template(t, chart, true))
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
