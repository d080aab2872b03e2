package postrenderer_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

// kubernetesTemplated are the folders of Kubernetes' manifests that hold a
// file templated for another tool (salt's {{ fluentd_gcp_configmap_name }}),
// which is no manifest a cluster takes, and what stream mode does with
// them: where the template breaks the YAML, it refuses the stream, naming
// the document and the line; where it leaves YAML that no API object
// decodes ({{ metadata_agent_cpu_request }} read as a mapping key) in a
// field confighash does not read, it writes the stream back unchanged and
// leaves the refusal to kubectl, as for any field it does not read.
var kubernetesTemplated = map[string]string{
	"cluster/addons/fluentd-gcp":                "did not find expected key",
	"cluster/addons/metadata-agent/stackdriver": "",
}

// TestKubernetesManifests runs stream mode over the manifests Kubernetes
// ships in its source, at the version the local control plane is built
// from (hack/controlplane/go.mod): each folder of cluster/addons (DNS,
// node-local DNS, metrics-server, Calico, ...) and of
// test/e2e/testing-manifests (StatefulSets with their ConfigMaps, the
// guestbook, ...) as one stream, its files one after the other as kubectl
// apply -f on the folder would read them, each held to what
// TestCorpusByteExact holds the corpus to.
func TestKubernetesManifests(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join(testtools.RepoRoot(t), "hack", "controlplane", "go.mod"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)$`).FindSubmatch(gomod)
	require.NotNil(t, m, "hack/controlplane/go.mod requires k8s.io/kubernetes")
	root := testtools.ModuleDir(t, "k8s.io/kubernetes@"+string(m[1]))
	var streams, hashed int
	for _, top := range []string{"cluster/addons", "test/e2e/testing-manifests"} {
		require.NoError(t, filepath.WalkDir(filepath.Join(root, top), func(dir string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
			if err != nil || len(files) == 0 {
				return err
			}
			slices.Sort(files)
			var input bytes.Buffer
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				input.WriteString("---\n")
				input.Write(b)
				input.WriteString("\n")
			}
			rel, err := filepath.Rel(root, dir)
			if err != nil {
				return err
			}
			t.Run(rel, func(t *testing.T) {
				streams++
				out, _, err := postrenderer.Process(input.Bytes(), inject.Options{})
				if why, templated := kubernetesTemplated[rel]; templated {
					if why == "" {
						require.NoError(t, err)
						assert.Equal(t, input.String(), string(out), "written back unchanged")
						return
					}
					require.Error(t, err, "a file templated for another tool")
					assert.Contains(t, err.Error(), why)
					assert.Regexp(t, `document \d+: yaml: line \d+`, err.Error())
					return
				}
				require.NoError(t, err)
				hashed += checkProcessed(t, input.Bytes(), out)
			})
			return nil
		}))
	}
	t.Logf("%d folders of Kubernetes' manifests, %d workloads hashed", streams, hashed)
	assert.Greater(t, streams, 40, "the folders read")
	assert.Positive(t, hashed, "workloads that read a ConfigMap of their folder")
}
