package cli_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

var hashLine = regexp.MustCompile(`confighash\.dev/hash: ["']?(v1-sha256:[0-9a-f]{64})`)

// hashesOf returns the hashes written in out, in order.
func hashesOf(out string) []string {
	var hs []string
	for _, m := range hashLine.FindAllStringSubmatch(out, -1) {
		hs = append(hs, m[1])
	}
	return hs
}

// withoutAnnotationLines drops the lines confighash writes, so that what is
// left of an output must equal its input.
func withoutAnnotationLines(s string) string {
	var keep []string
	for _, l := range strings.SplitAfter(s, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "confighash.dev/") || t == "annotations:" || t == "metadata:" {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "")
}

// TestInputTheAPIServerRefuses: input that kubectl or the API server would
// read differently from what was written (a key written twice, items that
// are not a list) is an error naming the document, in both modes, with
// nothing written.
func TestInputTheAPIServerRefuses(t *testing.T) {
	twoNames := strings.Replace(deployment, "  name: web\n", "  name: web\n  name: web2\n", 1)
	twoSpecs := deployment + "spec: {}\n"
	twoDataKeys := configMap + "  k: w\n"
	// kubectl and Helm 3 read the first document of a stream that starts
	// with "{" as JSON (jsonCM), which keeps a NEL in a string that YAML
	// reads as a line break, and joins a surrogate pair YAML refuses.
	nelList := jsonList(jsonCM("v\u0085w"), jsonWeb)
	// the line of the Deployment's name in a stream of configMap and it
	beforeName, _, _ := strings.Cut(deployment, "  name: web\n")
	lsLine := strconv.Itoa(strings.Count(configMap+"---\n"+beforeName, "\n") + 1)
	pairList := jsonList(jsonCM(`v\ud83d\ude00w`), jsonWeb)
	for _, tc := range []struct {
		name, input string
		want        []string
	}{
		{"two metadata.name, stream", configMap + "---\n" + twoNames, []string{"document 1", `metadata: key "name" appears twice`}},
		{"two spec, stream", configMap + "---\n" + twoSpecs, []string{"document 1", `key "spec" appears twice`}},
		{"two data keys, stream", twoDataKeys + "---\n" + deployment, []string{"document 0", `"k" appears twice`}},
		{"two metadata.name, KRM", testtools.ResourceList(configMap+"---\n"+twoNames, ""), []string{"items[1]", `metadata: key "name" appears twice`}},
		{"two spec, KRM", testtools.ResourceList(configMap+"---\n"+twoSpecs, ""), []string{"items[1]", `key "spec" appears twice`}},
		{"two data keys, KRM", testtools.ResourceList(twoDataKeys+"---\n"+deployment, ""), []string{"items[0]", `"k" appears twice`}},
		{"a NEL in a JSON List", nelList, []string{"document 0", "line 2: ", "U+0085", `write it as \u0085`}},
		{"a NEL in a JSON List after white space", "\n\n  " + nelList, []string{"document 0", "line 4: ", "U+0085"}},
		{"a NEL in the JSON object before a YAML document", jsonCM("v\u0085w") + "\n---\n" + deployment, []string{"document 0", "line 1: ", "U+0085"}},
		{"a NEL in the second of two JSON objects", jsonWeb + "\n" + jsonCM("v\u0085w") + "\n", []string{"document 0", "line 2: ", "U+0085"}},
		{"a surrogate pair in a JSON List", pairList, []string{"document 0", "line 2: ", "surrogate", "write the character itself, in UTF-8"}},
		{"a line separator next to a space in a JSON List", jsonList(jsonCM("v \u2028w"), jsonWeb), []string{"document 0", "line 2: ", "U+2028", `write it as \u2028`}},
		{"a lone surrogate in a JSON object", jsonCM(`v\udc00w`) + "\n---\n" + deployment, []string{"document 0", "line 1: ", "surrogate"}},
		// yaml.v3 decodes the first document of a stream that starts
		// with a UTF-16 byte order mark, which left the others' workloads
		// unseen and verify passing; characters YAML refuses, without
		// the line or the character before.
		{"UTF-16 with a byte order mark", utf16Text(configMap+"---\n"+deployment, false, true), []string{"UTF-16", "byte order mark FF FE", "iconv -f UTF-16 -t UTF-8"}},
		{"UTF-16 big-endian with a byte order mark", utf16Text(configMap+"---\n"+deployment, true, true), []string{"UTF-16", "FE FF"}},
		{"a later document in UTF-16 after its own byte order mark", configMap + "---\n" + utf16Text(deployment, false, true), []string{"line 8: ", "UTF-16 byte order mark (FF FE) inside the stream"}},
		{"UTF-16 without a byte order mark", utf16Text(configMap+"---\n"+deployment, false, false), []string{"document 0", "line 1: ", "U+0000", "UTF-16"}},
		{"a DEL in a ConfigMap", configMap + "  d: \"x\x7fy\"\n---\n" + deployment, []string{"document 0", "line 7: ", "U+007F", `as \u007F`}},
		// YAML, and kubectl, take a line separator for a line break,
		// which cuts the value in two: the line an editor shows, and the
		// character named.
		{"a line separator in a ConfigMap's value", configMap + "  d: x\u2028y\n---\n" + deployment, []string{"document 0", "line 7: ", "U+2028", `as \u2028`}},
		{"a line separator in the second document", configMap + "---\n" + strings.Replace(deployment, "  name: web\n", "  name: web\u2028x\n", 1),
			[]string{"document 1", "line " + lsLine + ": ", "(line " + lsLine + " holds U+2028", `as \u2028`}},
		{"a NEL in a ConfigMap's value, KRM", testtools.ResourceList(configMap+"  d: x\u0085y\n---\n"+deployment, ""), []string{"U+0085", `as \u0085`}},
		{"bytes that are not UTF-8 in the second document", configMap + "---\n" + strings.Replace(deployment, "web", "w\xffb", 1), []string{"document 1", "not UTF-8"}},
		{"a DEL in a ConfigMap, KRM", testtools.ResourceList(configMap+"  d: \"x\x7fy\"\n---\n"+deployment, ""), []string{"U+007F", `as \u007F`}},
		// A "---" line ended by a carriage return alone separates two
		// documents to YAML, none to kubectl, Helm and kustomize, which
		// cut streams at line feeds and drop the second document.
		{"a stream whose lines end with carriage returns", strings.ReplaceAll(configMap+"---\n"+deployment, "\n", "\r"),
			[]string{"document 0", "more YAML at line 7 (counting each carriage return", "drop the rest", `tr '\r' '\n'`}},
		{"a separator line ended by a carriage return", strings.Replace(configMap+"---\n"+deployment, "  k: v\n---\n", "  k: v\r---\r", 1),
			[]string{"document 0", "more YAML at line 7 (counting each carriage return", "drop the rest"}},
		{"items not a list", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: 5\n", []string{"ResourceList", "items", "not a list"}},
		{"items a map", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: {a: b}\n", []string{"ResourceList", "items", "not a list"}},
		{"item not an object", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [5]\n", []string{"items[0]", "not an object"}},
		{"two items keys", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nitems: []\n", []string{"ResourceList", `key "items" appears twice`}},
		{"alias bomb in a ConfigMap, stream", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata:\n  a: &a x\n" + laughs(), []string{"document 0", "excessive aliasing"}},
		{"alias bomb in a ConfigMap, KRM", testtools.ResourceList("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\nx:\n  a: &a [x]\n"+laughs(), ""), []string{"items[0]", "excessive aliasing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.input)
			assert.Equal(t, 1, code, errOut)
			assert.Empty(t, out, "nothing on stdout")
			for _, w := range tc.want {
				assert.Contains(t, errOut, w)
			}
			// explain, verify and diff read the input as the render does.
			good, _ := diffInputs(t, configMap+"---\n"+deployment, "")
			for _, args := range [][]string{{"explain"}, {"explain", "--json"}, {"verify"}, {"diff", good, "-"}, {"diff", "--json", "-", good}} {
				code, out, errOut := run(t, tc.input, args...)
				assert.Equal(t, 1, code, "%s: %s", args, errOut)
				assert.Empty(t, out, "%s: nothing on stdout", args)
				for _, w := range tc.want {
					assert.Contains(t, errOut, w, args)
				}
			}
		})
	}
}

// utf16Text is s in UTF-16, little- or big-endian, after a byte order
// mark or not.
func utf16Text(s string, bigEndian, bom bool) string {
	units := utf16.Encode([]rune(s))
	if bom {
		units = append([]uint16{0xfeff}, units...)
	}
	b := make([]byte, 0, 2*len(units))
	for _, u := range units {
		if bigEndian {
			b = binary.BigEndian.AppendUint16(b, u)
		} else {
			b = binary.LittleEndian.AppendUint16(b, u)
		}
	}
	return string(b)
}

// jsonCM is ConfigMap cfg as one line of JSON, its data value k written
// as it is.
func jsonCM(k string) string {
	return `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"k": "` + k + `"}}`
}

// jsonWeb is Deployment web, which reads cfg, as one line of JSON.
const jsonWeb = `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"template": {"spec": ` +
	`{"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "cfg"}}]}]}}}}`

// jsonList is a v1 List of items, one a line, as JSON.
func jsonList(items ...string) string {
	return "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n" + strings.Join(items, ",\n") + "]}\n"
}

// jsonHashLine is a hash annotation as the render writes it into JSON.
var jsonHashLine = regexp.MustCompile(`"confighash\.dev/hash": "(v1-sha256:[0-9a-f]{64})"`)

// jsonHashesOf returns the hashes written into JSON in out, in order.
func jsonHashesOf(out string) []string {
	var hs []string
	for _, m := range jsonHashLine.FindAllStringSubmatch(out, -1) {
		hs = append(hs, m[1])
	}
	return hs
}

// TestJSONReadAsKubectlReads: kubectl reads as YAML every document of a
// stream but the JSON it reads first when the stream starts with "{" (a
// "---" line, YAML, or JSON it refuses ends that), so a NEL written as it
// is there is a line break to kubectl as to confighash: every command
// reads such a stream, and the render hashes the NEL as YAML reads it, as
// the same stream with a space in its place. An escaped NEL is one
// character to both readings.
func TestJSONReadAsKubectlReads(t *testing.T) {
	nel, escaped, space := "v\u0085w", `v\u0085w`, "v w"
	for _, tc := range []struct {
		name  string
		input func(k string) string
		k     string // the value written
		// sameAs is another value written whose hash the input's equals
		// ("": none), notSameAs one whose hash differs.
		sameAs, notSameAs string
	}{
		{"a JSON object, then --- and a JSON ConfigMap", func(k string) string { return jsonWeb + "\n---\n" + jsonCM(k) + "\n" }, nel, space, escaped},
		{"a JSON ConfigMap after ---", func(k string) string { return "---\n" + jsonCM(k) + "\n---\n" + jsonWeb + "\n" }, nel, space, escaped},
		{"a JSON ConfigMap after a comment", func(k string) string { return "# c\n" + jsonCM(k) + "\n---\n" + jsonWeb + "\n" }, nel, space, escaped},
		{"JSON kubectl refuses (a tab in a string)", func(k string) string { return jsonList(jsonCM("\t"+k), jsonWeb) }, nel, space, escaped},
		{"an escaped NEL in a JSON List", func(k string) string { return jsonList(jsonCM(k), jsonWeb) }, escaped, "", space},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := tc.input(tc.k)
			code, out, errOut := run(t, input)
			require.Equal(t, 0, code, errOut)
			hs := jsonHashesOf(out)
			require.Len(t, hs, 1, out)
			for _, other := range []struct {
				k    string
				same bool
			}{{tc.sameAs, true}, {tc.notSameAs, false}} {
				if other.k == "" {
					continue
				}
				code, o, e := run(t, tc.input(other.k))
				require.Equal(t, 0, code, e)
				require.Len(t, jsonHashesOf(o), 1, o)
				assert.Equal(t, other.same, hs[0] == jsonHashesOf(o)[0], "%q", other.k)
			}
			path := filepath.Join(t.TempDir(), "rendered")
			require.NoError(t, os.WriteFile(path, []byte(out), 0o600))
			for _, args := range [][]string{{"explain"}, {"verify", path}, {"diff", path, "-"}} {
				code, _, errOut := run(t, input, args...)
				assert.Equal(t, 0, code, "%s: %s", args, errOut)
			}
		})
	}
}

// laughs is the rest of a billion-laughs mapping started by "  a: &a …".
func laughs() string {
	s := ""
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		s += "  " + n + ": &" + n + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 10), ",") + "]\n"
		prev = n
	}
	return s
}

// TestAnchorsAliasesAndMergeKeys: anchors, aliases and merge keys are valid
// YAML that kubectl and Helm resolve; confighash hashes what they resolve
// to, in both modes, and stream mode still changes only annotation lines.
func TestAnchorsAliasesAndMergeKeys(t *testing.T) {
	const workloadLabels = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: &l
    app: web
spec:
  selector:
    matchLabels: *l
  template:
    metadata:
      labels: *l
    spec:
      containers:
      - &c
        name: web
        image: x
        envFrom:
        - configMapRef:
            name: cfg
      initContainers:
      - *c
`
	const written = `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: "1"
  b: "2"
  c: "2"
`
	for _, tc := range []struct{ name, config, workload string }{
		{"aliases in data", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"1\"\n  b: &two \"2\"\n  c: *two\n", deployment},
		{"merge key in data", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  <<: &base\n    a: \"0\"\n    c: \"2\"\n  a: \"1\"\n  b: \"2\"\n", deployment},
		{"merge of an anchor defined elsewhere", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  labels: &base {a: \"1\", b: \"2\"}\ndata:\n  <<: *base\n  c: \"2\"\n", deployment},
		{"aliases in the workload", written, workloadLabels},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := tc.config + "---\n" + tc.workload
			// What the API server stores, written out by hand.
			_, plainOut, plainErr := run(t, written+"---\n"+deployment)
			want := hashesOf(plainOut)
			require.Len(t, want, 1, plainErr)

			code, out, errOut := run(t, input)
			require.Equal(t, 0, code, errOut)
			assert.Equal(t, want, hashesOf(out), "stream mode")
			assert.Equal(t, withoutAnnotationLines(input), withoutAnnotationLines(out), "stream mode changes annotation lines only")

			code, out, errOut = run(t, testtools.ResourceList(input, ""))
			require.Equal(t, 0, code, errOut)
			assert.Equal(t, want, hashesOf(out), "KRM mode")
		})
	}
}

// TestAnnotationInsideAnAlias: when the pod template's metadata is an alias
// (or gets its entries from a merge key), writing the annotation in place
// would change every use of the anchor; stream mode refuses, naming the
// document, and KRM mode, which writes the objects anew, annotates the
// expanded template only.
func TestAnnotationInsideAnAlias(t *testing.T) {
	for _, tc := range []struct{ name, workload string }{
		{"template metadata is an alias", "apiVersion: apps/v1\nkind: Deployment\nmetadata: &m\n  name: web\nspec:\n  template:\n    metadata: *m\n    spec:\n      containers:\n      - name: c\n        envFrom: [{configMapRef: {name: cfg}}]\n"},
		{"template metadata is an anchor used elsewhere", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: *m\nspec:\n  template:\n    metadata: &m\n      labels: {app: web}\n    spec:\n      containers:\n      - name: c\n        envFrom: [{configMapRef: {name: cfg}}]\n"},
		{"template metadata merges", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: &l {app: web}\nspec:\n  template:\n    metadata:\n      <<: {labels: *l}\n    spec:\n      containers:\n      - name: c\n        envFrom: [{configMapRef: {name: cfg}}]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.name, "used elsewhere") {
				// An alias must follow its anchor: swap to template-first order.
				tc.workload = "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    metadata: &m\n      labels: {app: web}\n    spec:\n      containers:\n      - name: c\n        envFrom: [{configMapRef: {name: cfg}}]\nmetadata:\n  name: web\n  labels: *m\n"
				tc.workload = strings.Replace(tc.workload, "labels: *m", "annotations: {x: y}\n  labels: {app: web}\nother: *m", 1)
			}
			input := configMap + "---\n" + tc.workload
			code, out, errOut := run(t, input)
			assert.Equal(t, 1, code, out)
			assert.Empty(t, out)
			assert.Contains(t, errOut, "Deployment web (document 1)")
			assert.Contains(t, errOut, "alias")

			code, out, errOut = run(t, testtools.ResourceList(input, ""))
			require.Equal(t, 0, code, errOut)
			assert.Len(t, hashesOf(out), 1, "KRM mode annotates the expanded template once")
		})
	}
}

// TestItemWithoutKindOrName: an item naming no kind or name that holds a
// repeated key is still reported, not a crash.
func TestItemWithoutKindOrName(t *testing.T) {
	code, out, errOut := run(t, "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- a: 1\n  a: 2\n")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `items[0]`)
}
