package fn_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/fn"
)

// kptItems are items as kpt fn render sends them: each with its file and
// index under the internal and the legacy keys, quoted as kpt quotes them,
// the sequence indent it read, and kpt's own resource id (kptAnnotations);
// one in a subpackage's folder, one whose pod template has no metadata.
var kptItems = "items:\n" +
	"- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: site\n" + kptMeta("0", "configmap.yaml", "compact") +
	"  data:\n    mode: fast\n" +
	"- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: web\n" + kptMeta("1", "worker/deploy.yaml", "wide") +
	`  spec:
    template:
      spec:
        containers:
          - name: web
            envFrom:
              - configMapRef: {name: site}
              - secretRef: {name: vault}
`

// kptMeta is the annotations block kpt gives the item of index in file path.
func kptMeta(index, path, seqindent string) string {
	return "    annotations:\n" +
		"      config.kubernetes.io/index: '" + index + "'\n      config.kubernetes.io/path: '" + path + "'\n" +
		"      internal.config.kubernetes.io/index: '" + index + "'\n      internal.config.kubernetes.io/path: '" + path + "'\n" +
		"      internal.config.kubernetes.io/seqindent: '" + seqindent + "'\n" +
		"      internal.config.k8s.io/kpt-resource-id: \"" + index + "\"\n"
}

// TestKptAnnotationsKept: confighash hands every annotation kpt sent back
// as it came (kpt reads them to write each object to its file, and fails on
// internal and legacy keys that disagree), adds only its own, and writes a
// result naming the file and index kpt gave. The ResourceList is read two
// ways (as one tree, and through kio when a separator or CR is in the
// text): both give the same output.
func TestKptAnnotationsKept(t *testing.T) {
	const head = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
	const fc = "functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: function-input\n" +
		"    annotations: {config.kubernetes.io/local-config: \"true\"}\n  data: {}\n"
	var outputs []string
	for _, input := range []string{head + kptItems + fc, "---\n" + head + kptItems + fc, strings.ReplaceAll(head+kptItems+fc, "\n", "\r\n")} {
		var out bytes.Buffer
		results, err := fn.Run(fn.Processor{}, strings.NewReader(input), &out)
		require.NoError(t, err)
		outputs = append(outputs, out.String())

		rl, err := yaml.Parse(out.String())
		require.NoError(t, err)
		items, err := rl.Pipe(yaml.Lookup("items"))
		require.NoError(t, err)
		got, err := items.Elements()
		require.NoError(t, err)
		want := kptAnnotations(t)
		require.Len(t, got, len(want))
		for i, item := range got {
			a := item.GetAnnotations()
			if item.GetKind() == "Deployment" {
				assert.Equal(t, "Secret/vault", a["confighash.dev/external"])
				delete(a, "confighash.dev/external")
				hash, err := item.Pipe(yaml.Lookup("spec", "template", "metadata", "annotations", "confighash.dev/hash"))
				require.NoError(t, err)
				assert.NotNil(t, hash, "the pod template, without metadata before, holds the hash")
				tpl, err := item.Pipe(yaml.Lookup("spec", "template"))
				require.NoError(t, err)
				fields, err := tpl.Fields()
				require.NoError(t, err)
				assert.Equal(t, []string{"metadata", "spec"}, fields,
					"metadata added ahead of the spec, where people write it and kpt writes it back to the file")
			}
			assert.Equal(t, want[i], a, "item %d: kpt's annotations as sent", i)
		}
		require.Len(t, results, 1)
		require.NotNil(t, results[0].File)
		assert.Equal(t, fn.File{Path: "worker/deploy.yaml", Index: 1}, *results[0].File)
		assert.Contains(t, out.String(), "  file:\n    path: worker/deploy.yaml\n    index: 1\n")
	}
	assert.Equal(t, outputs[0], outputs[1], "read as one tree or through kio: one output")
	assert.Equal(t, outputs[0], outputs[2], "CRLF line ends read as LF")
}

// kptAnnotations are the annotations of kptItems, by item.
func kptAnnotations(t *testing.T) []map[string]string {
	t.Helper()
	rl, err := yaml.Parse(kptItems)
	require.NoError(t, err)
	items, err := rl.Pipe(yaml.Lookup("items"))
	require.NoError(t, err)
	elems, err := items.Elements()
	require.NoError(t, err)
	var out []map[string]string
	for _, e := range elems {
		out = append(out, e.GetAnnotations())
	}
	return out
}
