package postrenderer_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/postrenderer"
)

// TestPrettyJSON: a pretty-printed JSON workload gets its annotation as a
// line of its own, in its indentation; it stays valid JSON.
func TestPrettyJSON(t *testing.T) {
	for name, meta := range map[string]string{
		"no metadata":    ``,
		"labels":         `"metadata": {` + "\n" + `        "labels": {"app": "x"}` + "\n" + `      },`,
		"empty metadata": `"metadata": {},`,
		"annotations":    `"metadata": {` + "\n" + `        "annotations": {` + "\n" + `          "a": "b"` + "\n" + `        }` + "\n" + `      },`,
	} {
		t.Run(name, func(t *testing.T) {
			in := layoutConfig + `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "web"
  },
  "spec": {
    "template": {
      ` + meta + `
      "spec": {
        "containers": [
          {"name": "a", "envFrom": [{"configMapRef": {"name": "cfg"}}]}
        ]
      }
    }
  }
}
`
			out, r, err := postrenderer.Process([]byte(in), inject.Options{})
			require.NoError(t, err)
			doc := strings.SplitN(string(out), "---\n", 2)[1]
			var v map[string]any
			require.NoError(t, json.Unmarshal([]byte(doc), &v), "valid JSON:\n%s", doc)
			assert.Equal(t, r.Workloads[0].Hash, hashAnnotations(t, out)["confighash.dev/hash"])
			assertOnlyMetadataChanged(t, in, string(out), meta)
			assert.Greater(t, strings.Count(doc, "\n"), 15, "still pretty-printed:\n%s", doc)
			again, _, err := postrenderer.Process(out, inject.Options{})
			require.NoError(t, err)
			assert.Equal(t, string(out), string(again))
		})
	}
}
