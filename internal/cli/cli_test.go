package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/cli"
	"github.com/confighash/confighash/internal/testing/testtools"
)

func run(t *testing.T, input string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(args, cli.IO{In: strings.NewReader(input), Out: &out, Err: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        envFrom:
        - configMapRef:
            name: cfg
`

const configMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  k: v
`

// TestBadInput: every kind of bad input exits non-zero, writes nothing to
// standard output, and names the document or field at fault.
func TestBadInput(t *testing.T) {
	// A billion laughs in a pod spec, the part confighash decodes.
	aliasBomb := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bomb}\nspec:\n  template:\n    spec:\n      x:\n"
	for i, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
		if i == 0 {
			aliasBomb += "        a: &a [x,x,x,x,x,x,x,x,x,x]\n"
			continue
		}
		prev := "*" + string(rune('a'+i-1))
		aliasBomb += "        " + name + ": &" + name + " [" + strings.Repeat(prev+",", 9) + prev + "]\n"
	}
	aliasBomb += "      containers:\n      - name: c\n        args: *i\n"
	tests := []struct {
		name, input string
		args        []string
		want        []string
	}{
		{name: "malformed YAML", input: configMap + "---\n" + "apiVersion: v1\nkind: [unclosed\n", want: []string{"document 1"}},
		{name: "not an object", input: configMap + "---\n- a\n- b\n", want: []string{"document 1", "not an object"}},
		{name: "alias bomb", input: aliasBomb, want: []string{"document 0", "excessive aliasing"}},
		{name: "invalid base64 in a Secret", input: "# Source: chart/templates/secret.yaml\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {password: 'not base64!'}\n",
			want: []string{"Secret s (document 0, chart/templates/secret.yaml)", "data.password", "base64"}},
		{name: "number in ConfigMap data", input: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {port: 8080}\n", want: []string{"ConfigMap c", "data.port", "number"}},
		{name: "metadata not a map", input: "apiVersion: apps/v1\nkind: Deployment\nmetadata: [x]\n", want: []string{"document 0", "metadata is not an object"}},
		{name: "bad prefix flag", input: deployment, args: []string{"--prefix", "Not A Prefix"}, want: []string{"prefix"}},
		{name: "namespace flag that is no namespace name", input: configMap + "---\n" + deployment, args: []string{"--namespace", "Shop_1"}, want: []string{"namespace", "Shop_1"}},
		{name: "namespace flag with a trailing space", input: configMap + "---\n" + deployment, args: []string{"--namespace=shop "}, want: []string{"namespace", `"shop "`}},
		{name: "namespace in functionConfig that is no namespace name", input: testtools.ResourceList(configMap+"---\n"+deployment, "apiVersion: confighash.dev/v1alpha1\nkind: ConfigHash\nmetadata: {name: x}\nnamespace: web.shop\n"), want: []string{"namespace", "web.shop"}},
		{name: "typed functionConfig with an unknown field", input: testtools.ResourceList(configMap+"---\n"+deployment, "apiVersion: confighash.dev/v1alpha1\nkind: ConfigHash\nmetadata: {name: x}\nprefx: typo\n"), want: []string{"functionConfig x", "prefx"}},
		{name: "ConfigMap functionConfig with an unknown key", input: testtools.ResourceList(configMap, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fc}\ndata: {annotationPrefx: a.b}\n"), want: []string{"functionConfig fc", "annotationPrefx"}},
		{name: "functionConfig of another kind", input: testtools.ResourceList(configMap, "apiVersion: example.com/v1\nkind: Other\nmetadata: {name: o}\n"), want: []string{"not supported"}},
		{name: "bad workload path in functionConfig", input: testtools.ResourceList(configMap, "apiVersion: confighash.dev/v1alpha1\nkind: ConfigHash\nmetadata: {name: x}\nworkloads: [{kind: CloneSet, path: /spec}]\n"), want: []string{"workloads[0]"}},
		{name: "duplicate ConfigMap", input: configMap + "---\n" + configMap, want: []string{"ConfigMap cfg (document 1)", "twice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.input, tt.args...)
			assert.Equal(t, 1, code)
			assert.Empty(t, out, "nothing on stdout")
			for _, w := range tt.want {
				assert.Contains(t, errOut, w)
			}
			assert.NotContains(t, errOut, "s3cr3t")
		})
	}
}

// TestMetadataThatIsNotAMap: metadata, annotations or labels that are not
// maps are refused in a document confighash reads, in both modes. The
// stream mode copies a document of another kind unread, byte for byte; the
// KRM mode refuses it too, since kio annotates every item it writes back
// (and drops or panics on such metadata).
func TestMetadataThatIsNotAMap(t *testing.T) {
	for _, meta := range []struct{ text, want string }{
		{"metadata: 0", "metadata is not an object"},
		{"metadata: [a]", "metadata is not an object"},
		{"metadata: {annotations: 0}", "metadata.annotations is not a map"},
		{"metadata: {labels: [a]}", "metadata.labels is not a map"},
		{"metadata: {name: [a]}", "metadata.name is not a string"},
	} {
		for _, kind := range []string{"apiVersion: example.com/v1\nkind: Widget", "apiVersion: apps/v1\nkind: Deployment", "apiVersion: v1\nkind: ConfigMap"} {
			doc := kind + "\n" + meta.text + "\n"
			relevant := !strings.Contains(kind, "Widget")
			t.Run(doc, func(t *testing.T) {
				code, out, errOut := run(t, doc)
				if relevant {
					assert.Equal(t, 1, code)
					assert.Empty(t, out)
					assert.Contains(t, errOut, "document 0: "+meta.want)
				} else {
					assert.Equal(t, 0, code, errOut)
					assert.Equal(t, doc, out, "copied unread")
				}
				code, out, errOut = run(t, testtools.ResourceList(configMap+"---\n"+doc, ""))
				assert.Equal(t, 1, code)
				assert.Empty(t, out)
				assert.Contains(t, errOut, "document 1: "+meta.want)
			})
		}
	}
}

// TestMetadataThatIsNotAMapInAList: the same inside a List, where the
// error names the List and the item once, in both modes. An item of
// another kind, or with no kind, is copied unread with its List.
func TestMetadataThatIsNotAMapInAList(t *testing.T) {
	for _, item := range []struct{ text, want string }{
		{"{apiVersion: v1, kind: ConfigMap, metadata: [a]}", "List l (document 0): items[1]: metadata is not an object"},
		{"{apiVersion: apps/v1, kind: Deployment, metadata: {annotations: 0}}", "List l (document 0): items[1]: metadata.annotations is not a map"},
		{"{apiVersion: v1, kind: Secret, metadata: {name: [a]}}", "List l (document 0): items[1]: metadata.name is not a string"},
		{"{apiVersion: example.com/v1, kind: Widget, metadata: [a]}", ""},
		{"{a: b, metadata: [a]}", ""},
		{"x", "List l (document 0): items[1]: not an object (found a string)"},
		{"[a]", "List l (document 0): items[1]: not an object (found a list)"},
	} {
		doc := "apiVersion: v1\nkind: List\nmetadata: {name: l}\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: s}}\n- " + item.text + "\n"
		t.Run(item.text, func(t *testing.T) {
			// Stream mode copies an unread item with its List byte for
			// byte; KRM mode writes the List back as an item (kio
			// annotates the List, not its items).
			for _, mode := range []struct{ input, copied string }{
				{doc, doc},
				{testtools.ResourceList(doc, ""), "  - " + item.text + "\n"},
			} {
				code, out, errOut := run(t, mode.input)
				if item.want != "" {
					assert.Equal(t, 1, code)
					assert.Empty(t, out)
					assert.Equal(t, "confighash: error: "+item.want+"\n", errOut)
				} else {
					assert.Equal(t, 0, code, errOut)
					assert.Contains(t, out, mode.copied, "copied unread")
				}
			}
		})
	}
	// A List needs no name: the error names its kind and document.
	code, _, errOut := run(t, "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: [a]}\n")
	assert.Equal(t, 1, code)
	assert.Equal(t, "confighash: error: List (document 0): items[0]: metadata is not an object\n", errOut)
}

func TestSecretValuesNeverPrinted(t *testing.T) {
	input := "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: s3cr3t-value}\ndata: {other: '!!!s3cr3t'}\n"
	code, out, errOut := run(t, input)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.NotContains(t, errOut, "s3cr3t")
}

func TestFunctionConfigForms(t *testing.T) {
	items := configMap + "---\n" + deployment
	for name, fc := range map[string]string{
		"none":      "",
		"ConfigMap": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fc}\ndata: {annotationPrefix: example.com}\n",
		"typed":     "apiVersion: confighash.dev/v1alpha1\nkind: ConfigHash\nmetadata: {name: fc}\nannotationPrefix: example.com\n",
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := run(t, testtools.ResourceList(items, fc))
			require.Equal(t, 0, code, errOut)
			prefix := "confighash.dev"
			if fc != "" {
				prefix = "example.com"
			}
			assert.Contains(t, out, prefix+"/hash:")
			assert.Contains(t, out, "kind: ResourceList")
		})
	}
}

func TestExternalIsReported(t *testing.T) {
	code, out, errOut := run(t, deployment)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "confighash.dev/external: ConfigMap/cfg")
	assert.Contains(t, errOut, "warning: Deployment web (document 0): consumes ConfigMap cfg, which is not in the stream")

	code, out, errOut = run(t, testtools.ResourceList(deployment, ""))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "results:")
	assert.Contains(t, out, "severity: warning")
}

// TestExplainLeavesOutLocalConfig: explain reads a ResourceList's items as
// the KRM function does, so a local-config ConfigMap (input to kustomize and
// kpt, never applied) is external to explain as to the render.
func TestExplainLeavesOutLocalConfig(t *testing.T) {
	local := strings.Replace(configMap, "  name: cfg\n", "  name: cfg\n  annotations: {config.kubernetes.io/local-config: \"true\"}\n", 1)
	require.NotEqual(t, configMap, local)
	input := testtools.ResourceList(local+"---\n"+deployment, "")
	code, out, errOut := run(t, input)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "confighash.dev/external: 'ConfigMap/cfg'", "the render")
	code, out, errOut = run(t, input, "explain")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `ConfigMap +cfg +EXTERNAL +all keys`, out, "explain")
}

func TestVersionAndHelp(t *testing.T) {
	code, out, _ := run(t, "", "version")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "confighash ")
	// Help asked for is the output (stdout, exit 0), as with kubectl and git:
	// `confighash diff --help | less` shows it.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "confighash [flags] < input"},
		{[]string{"-h"}, "confighash [flags] < input"},
		{[]string{"help"}, "confighash [flags] < input"},
		{[]string{"explain", "--help"}, "-json"},
		{[]string{"verify", "--help"}, "-hmac-key-file"},
		{[]string{"diff", "--help"}, "confighash diff [flags] OLD NEW"},
		{[]string{"diff", "-h"}, "-exit-code"},
		{[]string{"diff", "old.yaml", "--help"}, "-exit-code"},
		{[]string{"version", "--help"}, "confighash version"},
		{[]string{"version", "-h"}, "confighash version"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := run(t, "", tc.args...)
			assert.Equal(t, 0, code, errOut)
			assert.Contains(t, out, "Usage:")
			assert.Contains(t, out, tc.want)
			assert.Empty(t, errOut)
		})
	}
}

// TestUsageErrors: a flag or argument the command does not take is an error
// on standard error with the usage, nothing on standard output, and exit 1
// (diff --exit-code: 2, as 1 there means "workloads roll").
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--bogus"}, 1, "flag provided but not defined: -bogus"},
		{[]string{"explain", "--bogus"}, 1, "flag provided but not defined: -bogus"},
		{[]string{"explain", "a.yaml", "b.yaml"}, 1, `unexpected argument "b.yaml"`},
		{[]string{"verify", "--bogus"}, 1, "flag provided but not defined: -bogus"},
		{[]string{"verify", "--json"}, 1, "flag provided but not defined: -json"},
		{[]string{"verify", "a.yaml", "b.yaml"}, 1, `unexpected argument "b.yaml"`},
		{[]string{"verify", "-", "-"}, 1, `unexpected argument "-"`},
		{[]string{"verify", "--prefix"}, 1, "flag needs an argument: -prefix"},
		{[]string{"frobnicate"}, 1, `unexpected argument "frobnicate"`},
		{[]string{"--namespace", "shop", "rendered.yaml"}, 1, `unexpected argument "rendered.yaml": confighash reads the stream to hash from standard input (confighash [flags] < FILE)`},
		{[]string{"version", "--short"}, 1, `unexpected argument "--short"`},
		{[]string{"diff", "--bogus", "a", "b"}, 1, "flag provided but not defined: -bogus"},
		{[]string{"diff", "--exit-code", "--bogus", "a", "b"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"diff", "--bogus", "--exit-code", "a", "b"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"diff", "a", "b", "--exit-code=true", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"diff", "--exit-code=false", "--bogus", "a", "b"}, 1, "flag provided but not defined: -bogus"},
		{[]string{"diff", "--exit-code", "--prefix"}, 2, "flag needs an argument: -prefix"},
		{[]string{"diff", "--exit-code", "a"}, 2, "diff takes two renders, OLD and NEW (found 1 argument; see --help)"},
		{[]string{"diff", "a", "b", "c"}, 1, "diff takes two renders, OLD and NEW (found 3 arguments; see --help)"},
		{[]string{"diff", "--", "--exit-code"}, 1, "diff takes two renders"},
		{[]string{"diff", "--exit-code", "--", "--bogus", "b"}, 2, "reading --bogus"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := run(t, deployment, tc.args...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.want)
		})
	}
}

// TestKustomizeAnnotationsKept: the internal annotations kustomize and kpt
// put on items come back unchanged, and a second run changes nothing.
func TestKustomizeAnnotationsKept(t *testing.T) {
	annotated := strings.Replace(deployment, "  name: web\n", "  name: web\n  annotations:\n    config.kubernetes.io/index: '1'\n    internal.config.kubernetes.io/path: deploy.yaml\n    internal.config.kubernetes.io/previousNames: web\n    internal.config.kubernetes.io/previousKinds: Deployment\n    internal.config.kubernetes.io/previousNamespaces: default\n", 1)
	in := testtools.ResourceList(configMap+"---\n"+annotated, "")
	code, out, errOut := run(t, in)
	require.Equal(t, 0, code, errOut)
	for _, a := range []string{"config.kubernetes.io/index: '1'", "internal.config.kubernetes.io/path: deploy.yaml", "internal.config.kubernetes.io/previousNames: web", "internal.config.kubernetes.io/previousKinds: Deployment"} {
		assert.Contains(t, out, a)
	}
	code, again, errOut := run(t, out)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, out, again, "idempotent")
}

// TestKeyedMode runs the keyed vector's objects through the CLI: the same
// key gives the vector's value, another key another value, no key the plain
// hash.
func TestKeyedMode(t *testing.T) {
	const key = "a-key-only-the-deployer-knows" // testdata/vectors/06-hmac-keyed.yaml
	const want = "v1-hmac-sha256:f3636f5cf393ecc57c6558646ed7474c1e1d16b0b684ba9f032c2715771dcb1d"
	input := "apiVersion: v1\nkind: Secret\nmetadata: {name: db-creds}\nstringData: {username: admin, password: s3cr3t}\n---\n" +
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n      containers: [{name: app, image: example/app:1}]\n      volumes: [{name: creds, secret: {secretName: db-creds}}]\n"
	hashWith := func(env map[string]string, args ...string) string {
		var out, errb bytes.Buffer
		code := cli.Run(append([]string{"--namespace", "shop"}, args...), cli.IO{In: strings.NewReader(input), Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] }})
		require.Equal(t, 0, code, errb.String())
		m := regexp.MustCompile(`confighash.dev/hash: (\S+)`).FindStringSubmatch(out.String())
		require.Len(t, m, 2, out.String())
		return m[1]
	}
	file := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(file, []byte(key+"\n"), 0o600))
	assert.Equal(t, want, hashWith(nil, "--hmac-key-file", file))
	assert.Equal(t, want, hashWith(map[string]string{"CONFIGHASH_HMAC_KEY_FILE": file}))
	assert.Equal(t, want, hashWith(map[string]string{"CONFIGHASH_HMAC_KEY": key}))
	assert.NotEqual(t, want, hashWith(map[string]string{"CONFIGHASH_HMAC_KEY": "another key"}))
	assert.Equal(t, "v1-sha256:db044c714fc4df8a10d0b42c6a88a3171446b9bab775850b9f7366b47df7ee88", hashWith(nil), "vector 02: the same objects, plain")
}

// verify's message says why a hash is off: missing (the function did not
// run) or different (a later config change, another namespace or key).
func TestVerifyHints(t *testing.T) {
	stale := strings.Replace(deployment, "  template:\n", "  template:\n    metadata:\n      annotations:\n        confighash.dev/hash: v1-sha256:00\n", 1)
	for _, tt := range []struct {
		name, input, want, not string
	}{
		{"missing", deployment + "---\n" + configMap, "1 problem with the confighash.dev annotations (1 without one: did the function run?", "another value"},
		{"stale", stale + "---\n" + configMap, "1 with another value: the configs changed after the render", "did the function run"},
		{"a Helm hook Helm 3's post-renderer never saw", strings.Replace(deployment, "  name: web\n", "  name: web\n  annotations: {helm.sh/hook: post-install}\n", 1) + "---\n" + configMap,
			"1 without one on a Helm hook: Helm 3's --post-renderer never sees hooks, which helm template prints as rendered", "did the function run?"},
		// The function ran (it wrote the external list) when the config was
		// not in the stream under the name the workload reads: kustomize
		// substitutes vars: after its transformers, say.
		{"no hash, an external list naming a config of the stream", strings.Replace(deployment, "  name: web\n", "  name: web\n  annotations:\n    confighash.dev/external: ConfigMap/cfg\n", 1) + "---\n" + configMap,
			"1 without one, though the render wrote its external list: the configs it reads were not in the stream under these names when the function ran", "did the function run"},
		{"hash on a workload that reads nothing of the stream", stale + "---\n" + strings.Replace(configMap, "name: cfg", "name: other", 1),
			"1 on a workload that reads no config of the stream: names changed after the function ran", "did the function run"},
		// An earlier confighash wrote a Job's hash on its pod template,
		// which the API server refuses to change.
		{"a Job's hash on its pod template", oldLayoutJob(stale) + "---\n" + configMap,
			"1 on a Job's pod template, where an earlier confighash wrote it: the API server refuses any change of a Job's pod template, so confighash now writes a Job's hash on the Job itself; render again", "did the function run"},
		// confighash ran before the opt-out (in a kustomize base) and not
		// after it: what it wrote would still roll the pods.
		{"opted out, with the hash an earlier run wrote", optedOut(stale) + "---\n" + configMap,
			"Deployment web (document 0): opted out, but carries confighash.dev/hash\n", "another value"},
		{"opted out, with the external list an earlier run wrote", optedOut(strings.Replace(deployment, "name: cfg", "name: ext", 1), "confighash.dev/external: ConfigMap/ext") + "---\n" + configMap,
			`1 opted out (confighash.dev/enabled: "false") but carrying what confighash writes, which it removes from a workload that opts out: confighash ran before the opt-out (a kustomize base, an earlier render stage) and not after it`, "did the function run"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.input, "verify")
			assert.Equal(t, 1, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.want)
			assert.NotContains(t, errOut, tt.not)
		})
	}
}

// optedOut opts a Deployment of these tests out, with more annotations on
// it.
func optedOut(d string, more ...string) string {
	ann := "\n  annotations:\n    confighash.dev/enabled: \"false\"\n"
	for _, a := range more {
		ann += "    " + a + "\n"
	}
	return strings.Replace(d, "  name: web\n", "  name: web"+ann, 1)
}

// oldLayoutJob turns a Deployment of these tests into a Job, as an earlier
// confighash rendered it: the hash on the pod template, none on the Job.
func oldLayoutJob(d string) string {
	return strings.NewReplacer("apps/v1", "batch/v1", "kind: Deployment", "kind: Job").Replace(d)
}

// TestExplainMissingHints: explain names the same causes as verify for a
// workload without a hash, next to the hash it would write.
func TestExplainMissingHints(t *testing.T) {
	for _, tt := range []struct {
		name, input, want string
	}{
		{"missing", deployment + "---\n" + configMap, "(missing from the input)"},
		{"a Helm hook", strings.Replace(deployment, "  name: web\n", "  name: web\n  annotations: {helm.sh/hook: post-install}\n", 1) + "---\n" + configMap,
			"(missing from the input: a Helm hook, which Helm 3's --post-renderer never sees)"},
		{"an external list naming a config of the stream", strings.Replace(deployment, "  name: web\n", "  name: web\n  annotations:\n    confighash.dev/external: ConfigMap/cfg\n", 1) + "---\n" + configMap,
			"(missing from the input, which holds the external list the function wrote: the configs were not in the stream under these names when it ran)"},
		{"a Job's hash on its pod template", oldLayoutJob(strings.Replace(deployment, "  template:\n", "  template:\n    metadata:\n      annotations:\n        confighash.dev/hash: v1-sha256:00\n", 1)) + "---\n" + configMap,
			"(missing from the Job, whose pod template has one, where an earlier confighash wrote it: render again)"},
		{"opted out, with the annotations of an earlier run", optedOut(strings.Replace(deployment, "  template:\n", "  template:\n    metadata:\n      annotations:\n        confighash.dev/hash: v1-sha256:00\n", 1), "confighash.dev/external: Secret/x") + "---\n" + configMap,
			"  opted out (enabled: \"false\"), but carries confighash.dev/hash and confighash.dev/external, which confighash removes from a workload that opts out: render again with confighash after the opt-out\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.input, "explain")
			assert.Equal(t, 0, code, errOut)
			assert.Contains(t, out, tt.want)
		})
	}
}

// TestVerifyExternalList: the controller manages a workload that consumes
// only configs from outside the stream by the external list the render
// writes on it, so verify checks that list too (as a set, as the controller
// reads it): a render that skipped confighash, or whose configs joined or
// left the stream since, fails.
func TestVerifyExternalList(t *testing.T) {
	external := strings.Replace(deployment, "name: cfg", "name: ext", 1)
	listing := func(list string) string {
		return strings.Replace(external, "  name: web\n", "  name: web\n  annotations:\n    confighash.dev/external: "+list+"\n", 1)
	}
	for _, tc := range []struct {
		name, input string
		code        int
		want        string
	}{
		{"missing", external + "---\n" + configMap, 1, `1 problem with the confighash.dev annotations (1 without the confighash.dev/external list the render writes`},
		{"another list", listing("ConfigMap/old") + "---\n" + configMap, 1, `Deployment web (document 0): confighash.dev/external: want "ConfigMap/ext", found "ConfigMap/old"`},
		{"a config that joined the stream", listing("ConfigMap/ext") + "---\n" + strings.Replace(configMap, "name: cfg", "name: ext", 1), 1, "1 with another external list than the render writes"},
		{"the render's", listing("ConfigMap/ext") + "---\n" + configMap, 0, "ok: 1 workload"},
		{"the same set written otherwise", listing("' ConfigMap/ext,'") + "---\n" + configMap, 0, "ok: 1 workload"},
		{"opted out", strings.Replace(external, "  name: web\n", "  name: web\n  annotations: {confighash.dev/enabled: \"false\"}\n", 1), 0, "ok: 1 workload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.input, "verify")
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, out+errOut, tc.want)
		})
	}
}

// TestVerifyKeyedRender: verify of a render hashed with an HMAC key passes
// with that key (flag or environment) and, without it, with another key, or
// given a key for a plain render, fails saying which (as diff's staleHashes
// cause does) rather than suggesting that the configs changed.
func TestVerifyKeyedRender(t *testing.T) {
	input := configMap + "---\n" + deployment
	render := func(key string) string {
		var out, errb bytes.Buffer
		code := cli.Run(nil, cli.IO{In: strings.NewReader(input), Out: &out, Err: &errb, Getenv: func(k string) string {
			if k == "CONFIGHASH_HMAC_KEY" {
				return key
			}
			return ""
		}})
		require.Equal(t, 0, code, errb.String())
		return out.String()
	}
	keyed, plain := render("a-key"), render("")
	require.Contains(t, keyed, "confighash.dev/key-id: ecc58aa4c637408d")
	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, []byte("a-key\n"), 0o600))
	for _, tc := range []struct {
		name, input, key string
		args             []string
		code             int
		want, not        string
	}{
		{name: "keyed, the key", input: keyed, key: "a-key"},
		{name: "keyed, the key file", input: keyed, args: []string{"--hmac-key-file", keyFile}},
		{name: "keyed, no key", input: keyed, code: 1,
			want: "1 made with an HMAC key verify was not given: pass it with --hmac-key-file (or $CONFIGHASH_HMAC_KEY_FILE, $CONFIGHASH_HMAC_KEY)", not: "configs changed"},
		{name: "keyed, another key", input: keyed, key: "b-key", code: 1,
			want: "1 made with another HMAC key (key-id ecc58aa4c637408d", not: "configs changed"},
		{name: "plain, a key", input: plain, key: "a-key", code: 1, want: "1 made without an HMAC key, and verify was given one", not: "configs changed"},
		{name: "keyed, the key, a config changed", input: strings.Replace(keyed, "k: v", "k: w", 1), key: "a-key", code: 1,
			want: "1 with another value: the configs changed after the render", not: "HMAC key verify was not given"},
		{name: "explain, keyed, no key", input: keyed, args: []string{"explain"}, code: 0,
			want: "(the input has v1-hmac-sha256:", not: "stale"},
		{name: "explain, keyed, another key", input: keyed, key: "b-key", args: []string{"explain"}, code: 0,
			want: "made with another HMAC key, key-id ecc58aa4c637408d)", not: "stale"},
		{name: "explain --json, keyed, no key", input: keyed, args: []string{"explain", "--json"}, code: 0,
			want: `"keyMismatch": "keyed"`, not: "renderKeyID"},
		{name: "explain --json, keyed, another key", input: keyed, key: "b-key", args: []string{"explain", "--json"}, code: 0,
			want: `"keyMismatch": "other-key",
    "renderKeyID": "ecc58aa4c637408d",`},
		{name: "explain --json, plain, a key", input: plain, key: "a-key", args: []string{"explain", "--json"}, code: 0,
			want: `"keyMismatch": "unkeyed"`},
		{name: "explain --json, keyed, the key", input: keyed, key: "a-key", args: []string{"explain", "--json"}, code: 0,
			want: `"current": "v1-hmac-sha256:`, not: "keyMismatch"},
		{name: "explain --json, keyed, the key, a config changed", input: strings.Replace(keyed, "k: v", "k: w", 1), key: "a-key", args: []string{"explain", "--json"}, code: 0,
			want: `"current": "v1-hmac-sha256:`, not: "keyMismatch"},
		{name: "keyed without its key id, another key", input: regexp.MustCompile(`(?m)^ *confighash\.dev/key-id: .*\n`).ReplaceAllString(keyed, ""), key: "b-key", code: 1,
			want: "1 with another value", not: "key-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"verify"}, tc.args...)
			if len(tc.args) > 0 && tc.args[0] == "explain" {
				args = tc.args
			}
			code := cli.Run(args, cli.IO{In: strings.NewReader(tc.input), Out: &out, Err: &errb, Getenv: func(k string) string {
				if k == "CONFIGHASH_HMAC_KEY" {
					return tc.key
				}
				return ""
			}})
			assert.Equal(t, tc.code, code, errb.String())
			// Nothing names the key given or the one of the render.
			for _, key := range []string{"a-key", "b-key"} {
				assert.NotContains(t, out.String()+errb.String(), key)
			}
			if args[0] == "explain" {
				assert.Contains(t, out.String(), tc.want)
				if tc.not != "" {
					assert.NotContains(t, out.String(), tc.not)
				}
				return
			}
			if tc.code == 0 {
				assert.Equal(t, "ok: 1 workload, every hash current\n", out.String())
				return
			}
			assert.Empty(t, out.String())
			assert.Contains(t, errb.String(), tc.want)
			assert.NotContains(t, errb.String(), tc.not)
		})
	}
}

// TestExplainAndVerifyFile: explain and verify read a file named on the
// command line ("-" or none: standard input), with flags before or after
// it, and name the file in errors.
func TestExplainAndVerifyFile(t *testing.T) {
	code, rendered, errOut := run(t, configMap+"---\n"+deployment, "--namespace", "shop")
	require.Equal(t, 0, code, errOut)
	dir := t.TempDir()
	good, bad, empty := filepath.Join(dir, "rendered.yaml"), filepath.Join(dir, "bad.yaml"), filepath.Join(dir, "empty.yaml")
	require.NoError(t, os.WriteFile(good, []byte(rendered), 0o600))
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {password: 'CANARY-s3cr3t!'}\n"), 0o600))
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	for _, tc := range []struct {
		args      []string
		stdin     string
		code      int
		out, errs string
	}{
		{args: []string{"verify", "--namespace", "shop", good}, code: 0, out: "ok: 1 workload, every hash current"},
		{args: []string{"verify", good, "--namespace", "shop"}, code: 0, out: "ok: 1 workload, every hash current"},
		{args: []string{"verify", "--namespace", "shop", "-"}, stdin: rendered, code: 0, out: "ok: 1 workload"},
		{args: []string{"verify", good}, code: 1, errs: "1 with another value"},
		{args: []string{"explain", "--json", good}, code: 0, out: `"workload": "Deployment web"`},
		{args: []string{"explain", good, "--namespace", "shop"}, code: 0, out: "(present)"},
		{args: []string{"explain", good}, code: 0, out: "2 documents, 1 ConfigMap or Secret, 1 workload\n"},
		{args: []string{"verify", bad}, code: 1, errs: bad + ": Secret s (document 0): data.password: not valid base64"},
		{args: []string{"explain", bad}, code: 1, errs: bad + ": Secret s (document 0): data.password: not valid base64"},
		{args: []string{"verify", filepath.Join(dir, "missing.yaml")}, code: 1, errs: "reading " + filepath.Join(dir, "missing.yaml")},
		{args: []string{"explain", dir}, code: 1, errs: dir + " is a directory: explain reads a render"},
		{args: []string{"verify", empty}, code: 1, errs: "no objects in " + empty},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := run(t, tc.stdin, tc.args...)
			assert.Equal(t, tc.code, code, errOut)
			if tc.code != 0 {
				assert.Empty(t, out)
			}
			assert.Contains(t, out, tc.out)
			assert.Contains(t, errOut, tc.errs)
			assert.NotContains(t, out+errOut, "CANARY")
		})
	}
}

// TestVerifyNothing: verify of an input that holds no object fails: a
// render that failed in a pipeline without pipefail (or wrote its error
// elsewhere) leaves verify an empty stream, and "every hash current" would
// pass the CI job. Input with objects but no workload passes.
func TestVerifyNothing(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		code        int
	}{
		{"empty", "", 1},
		{"white space", "\n  \n", 1},
		{"comments only", "# Source: chart/templates/empty.yaml\n# nothing rendered\n", 1},
		{"separators only", "---\n# Source: chart/templates/a.yaml\n---\n---\n", 1},
		{"a ResourceList without items", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n", 1},
		{"a ConfigMap, no workload", configMap, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.input, "verify")
			assert.Equal(t, tc.code, code, errOut)
			if tc.code == 0 {
				assert.Equal(t, "ok: 0 workloads, every hash current\n", out)
				return
			}
			assert.Empty(t, out)
			assert.Contains(t, errOut, "no objects in standard input")
			assert.Contains(t, errOut, "pipefail")
		})
	}
}

// A hash on an object whose kind verify was not told about (a CRD the
// functionConfig lists under workloads) is not checked: verify says so and
// fails, and passes once given the same --workload.
func TestVerifyUnknownWorkloadKind(t *testing.T) {
	cloneSet := strings.Replace(deployment, "apiVersion: apps/v1\nkind: Deployment", "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet", 1)
	const workload = "--workload=CloneSet.apps.kruise.io=spec/template"
	code, rendered, errOut := run(t, cloneSet+"---\n"+configMap, workload)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, rendered, "confighash.dev/hash: ")

	code, out, errOut := run(t, rendered, "verify", workload)
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "ok: 1 workload, every hash current\n", out)

	code, out, errOut = run(t, rendered, "verify")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "  CloneSet web: confighash.dev/hash at spec.template.metadata.annotations, not checked")
	assert.Contains(t, errOut, "1 on a kind verify does not read: pass the functionConfig's workloads as --workload Kind.group=path")
}

// A keyed hash is written with its key id, through the stream and the KRM
// paths alike; a plain run over keyed output removes the key id with the
// keyed hash, and a run with another key replaces both.
func TestKeyIDAnnotation(t *testing.T) {
	input := deployment + "---\n" + configMap
	keyID := regexp.MustCompile(`confighash.dev/key-id: (\S+)`)
	run := func(in string, env map[string]string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code := cli.Run(nil, cli.IO{In: strings.NewReader(in), Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] }})
		require.Equal(t, 0, code, errb.String())
		return out.String()
	}
	keyed := run(input, map[string]string{"CONFIGHASH_HMAC_KEY": "a-key"})
	assert.Equal(t, []string{"confighash.dev/key-id: ecc58aa4c637408d", "ecc58aa4c637408d"}, keyID.FindStringSubmatch(keyed), keyed)
	assert.Contains(t, keyed, "confighash.dev/hash: v1-hmac-sha256:")
	fromKRM := run(testtools.ResourceList(input, ""), map[string]string{"CONFIGHASH_HMAC_KEY": "a-key"})
	assert.Regexp(t, `confighash.dev/key-id: '?ecc58aa4c637408d`, fromKRM) // kyaml quotes annotation values

	plain := run(keyed, nil)
	assert.NotContains(t, plain, "key-id", plain)
	assert.Contains(t, plain, "confighash.dev/hash: v1-sha256:")

	other := run(keyed, map[string]string{"CONFIGHASH_HMAC_KEY": "b-key"})
	assert.Equal(t, 1, strings.Count(other, "key-id"), other)
	assert.NotContains(t, other, "ecc58aa4c637408d")
}

// verify and explain read annotations as YAML does: a key id or hash
// written unquoted that YAML reads as a number is not the string, and
// kubectl would refuse the object.
func TestVerifyReadsAnnotationsAsYAML(t *testing.T) {
	env := func(k string) string {
		if k == "CONFIGHASH_HMAC_KEY" {
			return "key3816" // key id 9178192511668845: all decimal digits
		}
		return ""
	}
	runEnv := func(in string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := cli.Run(args, cli.IO{In: strings.NewReader(in), Out: &out, Err: &errb, Getenv: env})
		return code, out.String(), errb.String()
	}
	code, rendered, errOut := runEnv(deployment + "---\n" + configMap)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, rendered, `confighash.dev/key-id: "9178192511668845"`)
	code, out, errOut := runEnv(rendered, "verify")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "ok: 1 workload,")

	unquoted := strings.Replace(rendered, `"9178192511668845"`, "9178192511668845", 1)
	code, _, errOut = runEnv(unquoted, "verify")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "confighash.dev/key-id")
	assert.Contains(t, errOut, "not a string")

	hash := regexp.MustCompile(`confighash.dev/hash: (\S+)`).FindStringSubmatch(rendered)[1]
	numeric := strings.Replace(unquoted, hash, "1503602033657e77", 1)
	code, out, errOut = runEnv(numeric, "explain")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "not a string")
	assert.NotContains(t, out, "stale 1503602033657e77")
}
