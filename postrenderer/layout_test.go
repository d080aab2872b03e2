package postrenderer_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/postrenderer"
)

const layoutConfig = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v\n---\n"

// vaultLike is laid out as the HashiCorp Vault chart renders its injector:
// blank lines, zero-indented sequences, metadata ahead of spec. %s is the
// pod template's metadata line.
const vaultLike = `# Source: vault/templates/injector-deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vault-agent-injector

  labels:
    app.kubernetes.io/name: vault-agent-injector
spec:
  replicas: 1
  template:
    %s
    spec:

      containers:
        - name: sidecar-injector
          envFrom:
            - configMapRef:
                name: cfg
`

// TestEmptyMetadataLayouts: a pod template whose metadata or annotations
// are empty ({} or null) is edited in place; every other line is kept.
func TestEmptyMetadataLayouts(t *testing.T) {
	for _, meta := range []string{
		"metadata: {}",
		"metadata:",
		"metadata: ~",
		"metadata:\n      annotations: {}",
		"metadata:\n      annotations:",
		"metadata:\n      annotations: null\n      labels:\n        a: b",
		"metadata:\n      labels: {a: b}\n      annotations: {}  # none yet",
		"metadata: {labels: {a: b}}",
		// toYaml of an empty map after nindent, as charts write
		// annotations: {{- toYaml .Values.podAnnotations | nindent 8 }}
		"metadata:\n      annotations:\n        {}",
		"metadata:\n      {}",
		"metadata:\n      labels:\n        a: b\n      annotations:\n        {}",
	} {
		t.Run(meta, func(t *testing.T) {
			in := layoutConfig + strings.Replace(vaultLike, "%s", meta, 1)
			out, r, err := postrenderer.Process([]byte(in), inject.Options{})
			require.NoError(t, err)
			require.Len(t, r.Workloads, 1)
			assertOnlyMetadataChanged(t, in, string(out), meta)
			assert.Equal(t, r.Workloads[0].Hash, hashAnnotations(t, out)["confighash.dev/hash"])
			assertSecondRunSame(t, out, inject.Options{})
		})
	}
}

// TestFlowKeysFollowTheMapping: entries written into a flow mapping take
// its keys' style: plain where its first key is plain, as people write
// {labels: {app: web}}, double-quoted where it is quoted (JSON). Values
// are always double-quoted.
func TestFlowKeysFollowTheMapping(t *testing.T) {
	for _, c := range []struct{ meta, want string }{
		{"metadata: {labels: {a: b}}",
			`metadata: {annotations: {confighash.dev/hash: "%s"}, labels: {a: b}}`},
		{`metadata: {"labels": {"a": "b"}}`,
			`metadata: {"annotations": {"confighash.dev/hash": "%s"}, "labels": {"a": "b"}}`},
		{"metadata: {labels: {a: b}, annotations: {note: kept}}",
			`metadata: {labels: {a: b}, annotations: {confighash.dev/hash: "%s", note: kept}}`},
		{`metadata: {labels: {a: b}, annotations: {"x": "y"}}`,
			`metadata: {labels: {a: b}, annotations: {"confighash.dev/hash": "%s", "x": "y"}}`},
		{"metadata: {labels: {a: b}, annotations: {}}",
			`metadata: {labels: {a: b}, annotations: {confighash.dev/hash: "%s"}}`},
		{`metadata: {"labels": {"a": "b"}, "annotations": {}}`,
			`metadata: {"labels": {"a": "b"}, "annotations": {"confighash.dev/hash": "%s"}}`},
		{"metadata: {labels: {a: b}, annotations: {confighash.dev/key-id: old}}",
			`metadata: {labels: {a: b}, annotations: {confighash.dev/hash: "%s"}}`},
		{"metadata: {\n      labels: {a: b}\n    }",
			"metadata: {\n      annotations: {\n        confighash.dev/hash: \"%s\"\n      },\n      labels: {a: b}\n    }"},
	} {
		t.Run(c.meta, func(t *testing.T) {
			in := layoutConfig + strings.Replace(vaultLike, "%s", c.meta, 1)
			out, r, err := postrenderer.Process([]byte(in), inject.Options{})
			require.NoError(t, err)
			require.Len(t, r.Workloads, 1)
			want := layoutConfig + strings.Replace(vaultLike, "%s", fmt.Sprintf(c.want, r.Workloads[0].Hash), 1)
			assert.Equal(t, want, string(out))
			assert.Equal(t, r.Workloads[0].Hash, hashAnnotations(t, out)["confighash.dev/hash"])
			assertSecondRunSame(t, out, inject.Options{})
		})
	}
}

// assertOnlyMetadataChanged checks that out holds every line of in but the
// template's metadata lines, in order.
func assertOnlyMetadataChanged(t *testing.T, in, out, meta string) {
	t.Helper()
	skip := map[string]bool{}
	for _, l := range strings.Split(meta, "\n") {
		skip[strings.TrimSpace(l)] = true
	}
	outLines := strings.Split(out, "\n")
	j := 0
	for _, l := range strings.Split(in, "\n") {
		if skip[strings.TrimSpace(l)] {
			continue
		}
		for j < len(outLines) && outLines[j] != l {
			j++
		}
		if !assert.Less(t, j, len(outLines), "line %q lost or moved:\n%s", l, out) {
			return
		}
		j++
	}
}

// hashAnnotations reads the annotations of the last document's hash holder
// (its pod template, or a Job itself: the API server refuses changes of a
// Job's pod template, so its hash lives on the Job) through
// sigs.k8s.io/yaml, as kubectl does; a value that is not a string fails the
// test.
func hashAnnotations(t *testing.T, out []byte) map[string]string {
	t.Helper()
	docs := strings.Split(string(out), "\n---\n")
	type meta struct {
		Annotations map[string]json.RawMessage `json:"annotations"`
	}
	var obj struct {
		Kind     string `json:"kind"`
		Metadata meta   `json:"metadata"`
		Spec     struct {
			Template struct {
				Metadata meta `json:"metadata"`
			} `json:"template"`
		} `json:"spec"`
	}
	require.NoError(t, sigsyaml.Unmarshal([]byte(docs[len(docs)-1]), &obj))
	holder := obj.Spec.Template.Metadata
	if obj.Kind == "Job" {
		holder = obj.Metadata
	}
	got := map[string]string{}
	for k, raw := range holder.Annotations {
		var s string
		require.NoError(t, json.Unmarshal(raw, &s), "annotation %s is %s, not a string", k, raw)
		got[k] = s
	}
	return got
}

// TestKeyIDQuoted: key ids that look like numbers (all digits, digits
// around an e) are written as strings.
func TestKeyIDQuoted(t *testing.T) {
	for _, key := range []string{"key3816", "key1376"} {
		in := layoutConfig + strings.Replace(vaultLike, "%s", "metadata:\n      labels:\n        a: b", 1)
		opts := inject.Options{Key: []byte(key)}
		out, r, err := postrenderer.Process([]byte(in), opts)
		require.NoError(t, err)
		got := hashAnnotations(t, out)
		assert.Equal(t, r.Workloads[0].KeyID(opts), got["confighash.dev/key-id"], key)
		// An unquoted key id left by an older version is rewritten.
		stale := strings.Replace(string(out), `"`+got["confighash.dev/key-id"]+`"`, got["confighash.dev/key-id"], 1)
		require.NotEqual(t, string(out), stale)
		again, _, err := postrenderer.Process([]byte(stale), opts)
		require.NoError(t, err)
		assert.Equal(t, string(out), string(again), key)
	}
}

// TestRewrittenKeepsMetadata: a document confighash cannot edit in place (a
// comment between "annotations:" and its empty map; a carriage return that
// no line feed follows) is written anew, and keeps what its metadata held:
// an empty annotations map, and kustomize's index annotations, which kyaml's
// writer would drop.
func TestRewrittenKeepsMetadata(t *testing.T) {
	const dep = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  annotations: %s\nspec:\n  template:\n    metadata:\n      annotations: # none\n        {}\n    spec:\n      containers:\n        - name: x\n          envFrom:\n            - configMapRef:\n                name: cfg\n"
	for name, in := range map[string]string{
		"empty annotations": fmt.Sprintf(dep, "{}"),
		"kustomize's index": fmt.Sprintf(dep, "{config.kubernetes.io/index: '1', internal.config.kubernetes.io/index: '1'}"),
		"lone carriage return, empty annotations": strings.Replace(
			strings.Replace(fmt.Sprintf(dep, "{}"), "# none\n        {}", "{}", 1), "  name: d\n", "  name: d\r", 1),
	} {
		t.Run(name, func(t *testing.T) {
			input := layoutConfig + in
			out, r, err := postrenderer.Process([]byte(input), inject.Options{})
			require.NoError(t, err)
			require.Len(t, r.Workloads, 1)
			assert.Equal(t, r.Workloads[0].Hash, hashAnnotations(t, out)["confighash.dev/hash"])
			want, got := objectMetadata(t, input), objectMetadata(t, string(out))
			assert.Equal(t, want, got, "the Deployment's metadata")
			assertSecondRunSame(t, out, inject.Options{})
		})
	}
}

// objectMetadata reads the last document's metadata as kubectl does.
func objectMetadata(t *testing.T, stream string) map[string]any {
	t.Helper()
	docs := strings.Split(stream, "\n---\n")
	var obj struct {
		Metadata map[string]any `json:"metadata"`
	}
	require.NoError(t, sigsyaml.Unmarshal([]byte(docs[len(docs)-1]), &obj))
	return obj.Metadata
}

// TestUnicodeLineBreaks: YAML (yaml.v3, and the libyaml-based readers of
// kubectl and Helm) counts NEL (U+0085), LINE SEPARATOR (U+2028) and
// PARAGRAPH SEPARATOR (U+2029) as line breaks, also inside a quoted value,
// as Helm's toYaml and Go's JSON encoder write them. The edits land where
// the parser's lines say, whether the character is in the workload or in a
// document before it: the output means what the kyaml filter's does.
func TestUnicodeLineBreaks(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db\ndata:\n  a: x\n---\n"
	// A Deployment's hash goes on its pod template, a Job's on the Job.
	for _, kind := range []string{"apps/v1\nkind: Deployment", "batch/v1\nkind: Job"} {
		job := "apiVersion: " + kind + "\nmetadata:\n  name: j\n  labels: {note: \"%s\"}\nspec:\n  template:\n    metadata:\n      labels:\n        app: j\n    spec:\n      containers:\n      - name: a\n        envFrom:\n        - configMapRef:\n            name: db\n"
		checkUnicodeLineBreaks(t, cm, job)
	}
}

func checkUnicodeLineBreaks(t *testing.T, cm, job string) {
	for _, brk := range []string{"\u0085", "\u2028", "\u2029"} {
		note := "a" + brk + "b" + brk + brk + "c"
		for name, in := range map[string]string{
			"in the workload":             cm + fmt.Sprintf(job, note),
			"in a document before it":     cm + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata:\n  a: \"" + note + "\"\n---\n" + fmt.Sprintf(job, "n"),
			"in a Secret value before it": cm + "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  a: \"" + note + "\"\n---\n" + fmt.Sprintf(job, "n"),
		} {
			t.Run(fmt.Sprintf("%s %U %s", strings.Fields(job)[3], []rune(brk)[0], name), func(t *testing.T) {
				for _, opts := range []inject.Options{{}, {Key: []byte("k")}} {
					checkProcess(t, []byte(in), opts)
				}
				out, r, err := postrenderer.Process([]byte(in), inject.Options{})
				require.NoError(t, err)
				require.Len(t, r.Workloads, 1)
				assert.Equal(t, r.Workloads[0].Hash, hashAnnotations(t, out)["confighash.dev/hash"])
				assert.Contains(t, string(out), "      labels:\n        app: j\n", "the template's labels as they were")
			})
		}
	}
}
