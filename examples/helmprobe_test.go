package examples_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// probeChart is a chart of inputs Helm users write that the tests of Helm's
// own charts and docs do not hold: its files, the helm flags it renders
// with ("{dir}" stands for the chart's folder), and the workloads both Helms
// hash.
type probeChart struct {
	name   string
	files  map[string]string
	args   []string
	hashed []string
}

// probeCharts are the charts of TestHelmProbeInputs.
var probeCharts = []probeChart{
	{
		// Whole objects in flow style and as JSON, keys quoted in every
		// way, a separator with a comment on its line, a document of
		// comments only, a document ended with "...", and namespaces left
		// to --namespace: none, "", and .Release.Namespace.
		name: "layouts",
		args: []string{"--set", "token=CANARY-layouts"},
		files: map[string]string{
			"values.yaml": "level: info\ntoken: unset\n",
			"templates/configs.yaml": `{apiVersion: v1, kind: ConfigMap, metadata: {name: {{ .Release.Name }}-flow}, data: {level: {{ .Values.level | quote }}, "app.conf": 'x = 1'}}
--- # the Secret, written as JSON
{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "{{ .Release.Name }}-json", "namespace": ""},
 "stringData": {"token": {{ .Values.token | toJson }}}}
---
# a document of comments only
---
"apiVersion": "v1"
'kind': "ConfigMap"
"metadata":
  "name": {{ .Release.Name }}-quoted
  "namespace": {{ .Release.Namespace | quote }}
"data":
  "k": 'v'
  ? long
  : "explicit key"
...
`,
			"templates/deployment.yaml": `{{- /* a comment action, then the object in flow style */ -}}
{apiVersion: apps/v1, kind: Deployment, metadata: {name: {{ .Release.Name }}-app, namespace: ""},
 spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}},
  spec: {containers: [{name: app, image: nginx,
   envFrom: [{configMapRef: {name: {{ .Release.Name }}-flow}}, {secretRef: {name: "{{ .Release.Name }}-json"}}],
   env: [{name: K, valueFrom: {configMapKeyRef: {name: '{{ .Release.Name }}-quoted', key: "long"}}}]}]}}}}
`,
		},
		hashed: []string{"Deployment/shop/web-app"},
	},
	{
		// Double-quoted escapes (line and paragraph separators, a NUL, a
		// no-break space; a NEL is TestHelmProbeNEL's), single-quoted and plain scalars folded
		// over lines, a file with a byte order mark and CRLF line ends
		// through .Files.Get and indent, a tab in a value, and a Secret
		// with the same key in data and stringData (the API server keeps
		// stringData's).
		name: "escapes",
		files: map[string]string{
			"files/windows.txt": "\ufefffirst line\r\n\tsecond line\r\n",
			"templates/configs.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-escapes
data:
  quoted: "\x41\u00e9\e\_\L\P\0\t\"end"
  single: 'it''s
    folded

    twice'
  plain: one
    folded   line
  tab: "a	b"
  windows: |
{{ .Files.Get "files/windows.txt" | indent 4 }}
  windowsq: {{ .Files.Get "files/windows.txt" | quote }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-both
data:
  token: {{ "from-data" | b64enc }}
  other: {{ "only-data" | b64enc }}
stringData:
  token: CANARY-from-stringData
`,
			"templates/deployment.yaml": helmDocDeployment(
				"        - configMapRef:\n            name: {{ .Release.Name }}-escapes\n",
				"      - name: both\n        secret:\n          secretName: {{ .Release.Name }}-both\n"),
		},
		hashed: []string{"Deployment/shop/web-app"},
	},
	{
		// Values from --set-file (CRLF and lone CR line ends, a byte
		// order mark, binary bytes) and --set-string, as a block, quoted
		// and base64.
		name: "set-file",
		args: []string{
			"--set-file", "crlf={dir}/in/crlf.txt", "--set-file", "cr={dir}/in/cr.txt",
			"--set-file", "bom={dir}/in/bom.txt", "--set-file", "bin={dir}/in/blob.bin",
			"--set-string", "num=010", "--set-string", "port=8080",
		},
		files: map[string]string{
			"in/crlf.txt": "line1\r\nline2\r\n",
			"in/cr.txt":   "a\rb\rc\r",
			"in/bom.txt":  "\ufeffbom first\nsecond\n",
			"in/blob.bin": "\x00\x01\xfe\xffbinary\r\n\x85",
			"templates/configs.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-files
data:
  crlf: |
{{ .Values.crlf | indent 4 }}
  crlfq: {{ .Values.crlf | quote }}
  cr: {{ .Values.cr | quote }}
  bom: |-
{{ .Values.bom | indent 4 }}
  bomq: {{ .Values.bom | quote }}
  num: {{ .Values.num | quote }}
  port: "{{ .Values.port }}"
binaryData:
  blob: {{ .Values.bin | b64enc }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-files
data:
  blob: {{ .Values.bin | b64enc }}
  crlf: {{ .Values.crlf | b64enc }}
stringData:
  json: {{ .Values.crlf | toJson }}
`,
			"templates/deployment.yaml": helmDocDeployment(
				"        - configMapRef:\n            name: {{ .Release.Name }}-files\n        - secretRef:\n            name: {{ .Release.Name }}-files\n", ""),
		},
		hashed: []string{"Deployment/shop/web-app"},
	},
}

// probeBlockStyles are the ways probeGeneratedChart writes a value.
var probeBlockStyles = []string{"|", "|-", "|+", ">", ">-", ">+", "quote", "toJson"}

// probeGeneratedChart is a chart whose ConfigMap holds random values, each
// written in one of probeBlockStyles through indent, quote or toJson as
// charts write files and values: lines with spaces, tabs, blank lines,
// quotes, "#", ": " and long runs. A value's first line starts with a
// character that is not white space (indent cannot write another as a
// block). The ConfigMap ends in a plain value, so that no block that keeps
// its line breaks ends the document (Helm 4 stores such a block with one
// more, docs/helm.md).
func probeGeneratedChart(seed uint64, n int) probeChart {
	r := rand.New(rand.NewPCG(seed, 0))
	alphabet := []string{"a", "b", " ", "  ", "\t", "\n", "\n", "\n\n", "#", ": ", "- ", "'", `"`, `\`, "é", strings.Repeat("x", 90), "{", "}", "[", ",", "|", ">", "%", "&", "*", "!", "?"}
	values := map[string]string{}
	tpl := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-generated\ndata:\n"
	for i := range n {
		var b strings.Builder
		b.WriteString(string(rune('a' + r.IntN(26))))
		for range 1 + r.IntN(12) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		key := fmt.Sprintf("k%02d", i)
		values[key] = b.String()
		switch style := probeBlockStyles[i%len(probeBlockStyles)]; style {
		case "quote", "toJson":
			tpl += fmt.Sprintf("  %s: {{ .Values.v.%s | %s }}\n", key, key, style)
		default:
			tpl += fmt.Sprintf("  %s: %s\n{{ .Values.v.%s | indent 4 }}\n", key, style, key)
		}
	}
	tpl += "  zz: end\n"
	v, err := json.Marshal(map[string]any{"v": values})
	if err != nil {
		panic(err)
	}
	return probeChart{
		name: fmt.Sprintf("generated-%d", seed),
		files: map[string]string{
			"values.yaml":               string(v),
			"templates/configs.yaml":    tpl,
			"templates/deployment.yaml": helmDocDeployment("        - configMapRef:\n            name: {{ .Release.Name }}-generated\n", ""),
		},
		hashed: []string{"Deployment/shop/web-app"},
	}
}

// probeWrite writes a probe chart into a new folder and returns it, with
// the chart's args "{dir}" replaced by it.
func probeWrite(t *testing.T, pc probeChart) (string, []string) {
	t.Helper()
	chart := filepath.Join(t.TempDir(), "probe")
	files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: probe\nversion: 0.1.0\n"}
	maps.Copy(files, pc.files)
	writeTree(t, chart, files)
	args := make([]string, len(pc.args))
	for i, a := range pc.args {
		args[i] = strings.ReplaceAll(a, "{dir}", chart)
	}
	return chart, args
}

// TestHelmProbeInputs renders probeCharts with each Helm, checks each
// render as checkPostRender does, and holds every hash to the objects as
// kubectl and Helm's kube client read the render (probeAsKubectlReads: YAML
// 1.1, sigs.k8s.io/yaml) as well: both Helms hash the charts' workloads
// alike. It renders generated charts too (probeGeneratedChart), whose
// hashes it holds to the objects as kubectl reads them alone:
// checkPostRender reads what Helm sent through kyaml, which writes a
// folded block with a line that starts with a tab anew with more blank
// lines, as Helm 4 does with any post-renderer (docs/helm.md), so for those
// Helm 3 and Helm 4 may hash differently, each what it installs.
func TestHelmProbeInputs(t *testing.T) {
	t.Parallel()
	charts := slices.Clone(probeCharts)
	for seed := range uint64(6) {
		charts = append(charts, probeGeneratedChart(seed+1, 24))
	}
	for _, pc := range charts {
		generated := strings.HasPrefix(pc.name, "generated-")
		hashes := map[int]map[string]string{}
		t.Run(pc.name, func(t *testing.T) {
			for _, version := range []int{3, 4} {
				t.Run(helmName(version), func(t *testing.T) {
					h := helmWithIdentity(t, version)
					chart, args := probeWrite(t, pc)
					if !generated {
						r := checkPostRender(t, h, chart, false, args...)
						require.Zero(t, r.exitCode, r.stderr)
						hashes[version] = r.hashes
					}
					out := h.MustRun(t, append([]string{"template", "web", chart, "--namespace", realNamespace}, append(args, realPostRenderer(t, h)...)...)...)
					read := probeAsKubectlReads(t, out)
					assert.ElementsMatch(t, pc.hashed, slices.Collect(maps.Keys(testtools.PodHashes(t, read))), "hashed workloads")
					assertIndependent(t, h.String()+" as kubectl reads it", read)
				})
			}
			if !generated {
				assert.Equal(t, hashes[3], hashes[4], "Helm 3's and Helm 4's hashes")
			}
		})
	}
}

// probeAsKubectlReads reads a stream as kubectl and Helm's kube client do
// (k8s.io/apimachinery's YAML or JSON decoder, sigs.k8s.io/yaml), puts the
// objects that name no namespace in realNamespace, and writes each object
// back as a JSON document with every character past ASCII
// escaped, which a YAML reader reads as the decoder did (it breaks lines at
// a raw NEL, LINE SEPARATOR or PARAGRAPH SEPARATOR, even inside quotes).
func probeAsKubectlReads(t *testing.T, stream string) string {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	var b strings.Builder
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return b.String()
		}
		require.NoError(t, err, "kubectl's reader")
		if obj == nil {
			continue
		}
		if md, ok := obj["metadata"].(map[string]any); ok && (md["namespace"] == nil || md["namespace"] == "") {
			md["namespace"] = realNamespace // as Helm's -n
		}
		b.WriteString(probeJSON(t, obj))
	}
}

// probeJSON writes obj as a JSON document ("---" and a line) with every
// character past ASCII escaped.
func probeJSON(t *testing.T, obj any) string {
	t.Helper()
	j, err := json.Marshal(obj)
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("---\n")
	for _, c := range string(j) {
		switch {
		case c < 0x80:
			b.WriteRune(c)
		case c > 0xffff:
			c1, c2 := utf16.EncodeRune(c)
			fmt.Fprintf(&b, `\u%04x\u%04x`, c1, c2)
		default:
			fmt.Fprintf(&b, `\u%04x`, c)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// TestHelmProbeInstalled installs probeCharts and a generated chart with
// each Helm and confighash on the local control plane, and holds each
// workload's hash to the ConfigMaps and Secrets the API server stored,
// read back through the API (the independent computation of
// assertIndependent): what was hashed is what was installed, escapes,
// CRLF, byte order marks, binary bytes, flow style and folded blocks
// included.
func TestHelmProbeInstalled(t *testing.T) {
	t.Parallel()
	charts := append(slices.Clone(probeCharts), probeGeneratedChart(5, 24))
	for i, pc := range charts {
		t.Run(pc.name, func(t *testing.T) {
			eachHelm(t, "web", fmt.Sprintf("probe-%d", i), func(t *testing.T, version int, r *release, h testtools.Helm) {
				chart, args := probeWrite(t, pc)
				r.mustHelm(t, h, "install", chart, append([]string{"--create-namespace"}, args...)...)
				live, hashed := probeLive(t, r)
				assert.ElementsMatch(t, pc.hashed, hashed, "hashed workloads")
				assertIndependent(t, h.String()+" installed", live)
			})
		})
	}
}

// probeLive returns the ConfigMaps, Secrets (but Helm's release records)
// and Deployments of r's namespace as the API server stores them, as a
// stream of JSON documents, and the Deployments that carry a hash.
func probeLive(t *testing.T, r *release) (string, []string) {
	t.Helper()
	ctx := t.Context()
	var live strings.Builder
	cms, err := r.client.CoreV1().ConfigMaps(r.namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, o := range cms.Items {
		o.APIVersion, o.Kind, o.ManagedFields = "v1", "ConfigMap", nil
		live.WriteString(probeJSON(t, o))
	}
	secrets, err := r.client.CoreV1().Secrets(r.namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, o := range secrets.Items {
		if o.Type != "helm.sh/release.v1" {
			o.APIVersion, o.Kind, o.ManagedFields = "v1", "Secret", nil
			live.WriteString(probeJSON(t, o))
		}
	}
	deploys, err := r.client.AppsV1().Deployments(r.namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var hashed []string
	for _, o := range deploys.Items {
		o.APIVersion, o.Kind, o.ManagedFields = "apps/v1", "Deployment", nil
		live.WriteString(probeJSON(t, o))
		if o.Spec.Template.Annotations[hashKey] != "" {
			hashed = append(hashed, "Deployment/shop/"+o.Name)
		}
	}
	return live.String(), hashed
}

// TestHelmProbeNEL installs a chart whose ConfigMap holds a NEL (U+0085)
// written as the escape "\N" and through quote (which escapes it as
// "\u0085"), and pins what docs/helm.md says: Helm 3, and Helm 4 with
// --server-side=false, store the NEL, and the hash is that of the stored
// ConfigMap; Helm 4's server-side apply (its default) stores a space in its
// place, so the hash confighash wrote describes a value the cluster does
// not hold. (Should Helm 4 start to store the NEL, this test fails: the
// docs must then say the hashes agree.)
func TestHelmProbeNEL(t *testing.T) {
	t.Parallel()
	chart := probeConfigChart(t, "ConfigMap", "nel", "text: \"three\\u0085four\"\n", `data:
  escape: "one\Ntwo"
  quoted: {{ .Values.text | quote }}
`)
	for _, tc := range []struct {
		name    string
		version int
		args    []string
		stored  map[string]string
	}{
		{"helm3", 3, nil, map[string]string{"escape": "one\u0085two", "quoted": "three\u0085four"}},
		{"helm4-client-side", 4, []string{"--server-side=false"}, map[string]string{"escape": "one\u0085two", "quoted": "three\u0085four"}},
		{"helm4", 4, nil, map[string]string{"escape": "one two", "quoted": "three four"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRelease(t, "web", "probe-nel-"+tc.name)
			h := r.helmV(tc.version)
			r.mustHelm(t, h, "install", chart, append([]string{"--create-namespace"}, tc.args...)...)
			cm, err := r.client.CoreV1().ConfigMaps(r.namespace).Get(t.Context(), "web-nel", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.stored, cm.Data, "what the API server stored")
			probeAssertLive(t, r, tc.name, strings.Contains(tc.stored["escape"], "\u0085"))
		})
	}
}

// TestHelmProbeStringDataKeyRemoved installs a chart whose Secret writes
// its keys as stringData or as data, upgrades it with one key removed, and
// pins what docs/helm.md says: with data, both Helms remove the key from the
// stored Secret, whose hash is then the workload's; with stringData, which
// the API server merges into data and never stores, neither Helm removes
// it (Helm 3's patch and Helm 4's server-side apply remove only stringData's
// key), so the Secret keeps the key and the workload's hash, computed over
// the keys rendered, is not the stored Secret's.
func TestHelmProbeStringDataKeyRemoved(t *testing.T) {
	t.Parallel()
	for _, field := range []string{"data", "stringData"} {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			value := "{{ $v | quote }}"
			if field == "data" {
				value = "{{ $v | b64enc }}"
			}
			chart := probeConfigChart(t, "Secret", "creds", "secret:\n  user: admin\n  password: CANARY-s3cret\n", field+`:
{{- range $k, $v := .Values.secret }}
  {{ $k }}: `+value+`
{{- end }}
`)
			eachHelm(t, "web", "probe-removed-"+strings.ToLower(field), func(t *testing.T, version int, r *release, h testtools.Helm) {
				r.mustHelm(t, h, "install", chart, "--create-namespace")
				r.mustHelm(t, h, "upgrade", chart, "--set", "secret.password=null")
				s, err := r.client.CoreV1().Secrets(r.namespace).Get(t.Context(), "web-creds", metav1.GetOptions{})
				require.NoError(t, err)
				kept := field == "stringData"
				assert.Equal(t, kept, s.Data["password"] != nil, "%s: the removed key in the stored Secret", h)
				probeAssertLive(t, r, h.String(), !kept)
			})
		})
	}
}

// TestHelmProbeTakeOwnership creates a ConfigMap with two keys outside
// Helm (as kubectl create does), then installs a chart that renders it with
// one of them under --take-ownership, and pins what docs/helm.md says: Helm
// 3 keeps the key it does not render (its patch of an object it adopts
// removes nothing), and so does Helm 4 under --force-conflicts (without it,
// its server-side apply refuses the install: the other writer owns the key
// it renders); the workload's hash, over the key rendered, is then not the
// stored ConfigMap's.
func TestHelmProbeTakeOwnership(t *testing.T) {
	t.Parallel()
	chart := probeConfigChart(t, "ConfigMap", "settings", "", `data:
  level: info
`)
	eachHelm(t, "web", "probe-adopt", func(t *testing.T, version int, r *release, h testtools.Helm) {
		_, err := r.client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.namespace}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = r.client.CoreV1().ConfigMaps(r.namespace).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "web-settings"}, Data: map[string]string{"level": "debug", "extra": "from before"},
		}, metav1.CreateOptions{FieldManager: "kubectl-create"})
		require.NoError(t, err)
		if version == 4 {
			res := r.helm(t, h, "install", chart, nil, "--take-ownership")
			require.NotZero(t, res.ExitCode, "helm4 --take-ownership of a key another writer owns")
			assert.Contains(t, res.Stderr, "conflict with \"kubectl-create\"")
			r.mustHelm(t, h, "upgrade", chart, "--install", "--take-ownership", "--force-conflicts") // over the failed release
		} else {
			r.mustHelm(t, h, "install", chart, "--take-ownership")
		}
		cm, err := r.client.CoreV1().ConfigMaps(r.namespace).Get(t.Context(), "web-settings", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"level": "info", "extra": "from before"}, cm.Data, "%s: the adopted ConfigMap", h)
		probeAssertLive(t, r, h.String(), false)
	})
}

// TestHelmProbeKeyRemovedAcrossVersions installs a release with Helm 3 and
// upgrades it with Helm 4 with one ConfigMap key removed: server-side apply
// removes only fields its manager applied before, and Helm 3 applied none,
// yet Helm 4 removes the key, and the workload's hash is the stored
// ConfigMap's.
func TestHelmProbeKeyRemovedAcrossVersions(t *testing.T) {
	t.Parallel()
	chart := probeConfigChart(t, "ConfigMap", "settings", "settings:\n  level: info\n  color: blue\n", `data:
{{- range $k, $v := .Values.settings }}
  {{ $k }}: {{ $v | quote }}
{{- end }}
`)
	r := newRelease(t, "web", "probe-moved")
	r.mustHelm(t, r.h3, "install", chart, "--create-namespace")
	r.mustHelm(t, r.h4, "upgrade", chart, "--set", "settings.color=null")
	cm, err := r.client.CoreV1().ConfigMaps(r.namespace).Get(t.Context(), "web-settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"level": "info"}, cm.Data, "the ConfigMap after the upgrade")
	probeAssertLive(t, r, "helm3 then helm4", true)
}

// probeAssertLive reads r's namespace as probeLive does and asserts that
// its one Deployment, web-app, carries a hash, and that it is the hash of
// the configs the API server stored when matches is set, or not.
func probeAssertLive(t *testing.T, r *release, what string, matches bool) {
	t.Helper()
	live, hashed := probeLive(t, r)
	require.Equal(t, []string{"Deployment/shop/web-app"}, hashed)
	for id, got := range independentHashes(t, live) {
		if matches {
			assert.Equal(t, got.want, got.hash, "%s %s: the hash of the stored configs", what, id)
		} else {
			assert.NotEqual(t, got.want, got.hash, "%s %s: the hash of what was rendered, not of the configs stored", what, id)
		}
	}
}

// probeConfigChart writes a chart of values.yaml, a config of kind named
// <release>-<name> whose template is body after its metadata.name line, and
// a Deployment web-app that reads the config whole, and returns its folder.
func probeConfigChart(t *testing.T, kind, name, values, body string) string {
	t.Helper()
	chart := filepath.Join(t.TempDir(), name)
	ref := map[string]string{"ConfigMap": "configMapRef", "Secret": "secretRef"}[kind]
	writeTree(t, chart, map[string]string{
		"Chart.yaml":                "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n",
		"values.yaml":               values,
		"templates/config.yaml":     "apiVersion: v1\nkind: " + kind + "\nmetadata:\n  name: {{ .Release.Name }}-" + name + "\n" + body,
		"templates/deployment.yaml": helmDocDeployment("        - "+ref+":\n            name: {{ .Release.Name }}-"+name+"\n", ""),
	})
	return chart
}
