package rolldiff_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/rolldiff"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

const base = `apiVersion: v1
kind: ConfigMap
metadata: {name: app, namespace: shop}
data: {LOG_LEVEL: info, UNUSED: x, PORT: "80"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: shop}
stringData: {password: hunter2-secret-value}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: web:1
        env:
        - name: LOG_LEVEL
          valueFrom: {configMapKeyRef: {name: app, key: LOG_LEVEL}}
        - name: PORT
          valueFrom: {configMapKeyRef: {name: app, key: PORT}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  template:
    spec:
      containers:
      - name: api
        image: api:1
        envFrom: [{secretRef: {name: creds}}]
        volumeMounts: [{name: cfg, mountPath: /etc/app}]
      volumes:
      - name: cfg
        configMap: {name: app, items: [{key: PORT, path: port}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: shop}
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: report
            image: report:1
            env:
            - name: TOKEN
              valueFrom: {secretKeyRef: {name: token, key: value}}
`

// krmInput is a kustomize function's input: its generated ConfigMap and
// Secret carry their names without the hash suffix kustomize adds after the
// function has run, and the workload refers to them by those names.
var krmInput = testtools.ResourceList(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  annotations: {internal.config.kubernetes.io/needsHashSuffix: enabled}
data: {LOG_LEVEL: info, PORT: "80"}
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  annotations: {internal.config.kubernetes.io/needsHashSuffix: enabled}
stringData: {password: hunter2-secret-value}
---
`+kubetest.Workload{Name: "web", Env: []string{kubetest.EnvKey("app", "PORT")}, EnvFrom: []string{"{secretRef: {name: creds}}"}}.YAML(), "")

// helmHook is helm template's output (Helm 3, confighash as its
// post-renderer) of a chart whose Deployment reads a hook's ConfigMap.
var helmHook = "---\n# Source: hk/templates/deploy.yaml\n" +
	kubetest.Workload{Name: "hk", Annotations: map[string]string{"confighash.dev/external": "ConfigMap/hook-cfg"},
		EnvFrom: []string{"{configMapRef: {name: hook-cfg}}"}}.YAML() + `---
# Source: hk/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: hook-cfg
  annotations: {helm.sh/hook: pre-install}
data: {k: a}
`

// fileLine is the line, counted from 1, of byte offset i of text.
func fileLine(text string, i int) int { return strings.Count(text[:i], "\n") + 1 }

// edit applies string replacements to base, each of which must match.
func edit(t *testing.T, pairs ...string) string {
	t.Helper()
	s := base
	for i := 0; i+1 < len(pairs); i += 2 {
		require.Contains(t, s, pairs[i], "edit %q", pairs[i])
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

func compare(t *testing.T, old, cur string, opts inject.Options) rolldiff.Result {
	t.Helper()
	o, err := rolldiff.Read("old", []byte(old), opts)
	require.NoError(t, err)
	n, err := rolldiff.Read("new", []byte(cur), opts)
	require.NoError(t, err)
	return rolldiff.Compare(o, n)
}

// render runs the post-renderer's stream mode on in, failing the test on
// an error.
func render(t *testing.T, in string, opts inject.Options) string {
	t.Helper()
	out, _, err := postrenderer.Process([]byte(in), opts)
	require.NoError(t, err)
	return string(out)
}

func byID(r rolldiff.Result) map[string]rolldiff.Workload {
	out := map[string]rolldiff.Workload{}
	for _, w := range r.Workloads {
		out[w.Kind+"/"+w.Name] = w
	}
	return out
}

func TestCompare(t *testing.T) {
	secretDoc := "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: shop}\nstringData: {password: hunter2-secret-value}\n---\n"
	tokenDoc := "---\napiVersion: v1\nkind: Secret\nmetadata: {name: token, namespace: shop}\nstringData: {value: t0ken-secret}\n"
	tests := []struct {
		name string
		old  string
		new  string
		// rolls lists Kind/name of the workloads that roll; status the
		// other statuses expected.
		rolls  []string
		status map[string]rolldiff.Status
		// configs: Kind/name → the config changes expected on it, as
		// "Kind/name change added|removed|changed".
		configs map[string][]string
		// fields: Kind/name → the template fields expected.
		fields map[string][]string
	}{
		{
			name: "a key consumed by one workload changes",
			old:  base, new: edit(t, "LOG_LEVEL: info", "LOG_LEVEL: debug"),
			rolls:   []string{"Deployment/web"},
			configs: map[string][]string{"Deployment/web": {"ConfigMap/app keys ||LOG_LEVEL"}},
		},
		{
			name: "a key nobody consumes changes",
			old:  base, new: edit(t, "UNUSED: x", "UNUSED: z"),
		},
		{
			name: "a key two workloads consume changes",
			old:  base, new: edit(t, `PORT: "80"`, `PORT: "81"`),
			rolls: []string{"Deployment/api", "Deployment/web"},
			configs: map[string][]string{
				"Deployment/web": {"ConfigMap/app keys ||PORT"},
				"Deployment/api": {"ConfigMap/app keys ||PORT"},
			},
		},
		{
			name: "a key added to a Secret consumed whole",
			old:  base, new: edit(t, "password: hunter2-secret-value", "password: hunter2-secret-value, user: admin"),
			rolls:   []string{"Deployment/api"},
			configs: map[string][]string{"Deployment/api": {"Secret/creds keys user||"}},
		},
		{
			name: "a key removed from a Secret consumed whole",
			old:  edit(t, "password: hunter2-secret-value", "password: hunter2-secret-value, user: admin"), new: base,
			rolls:   []string{"Deployment/api"},
			configs: map[string][]string{"Deployment/api": {"Secret/creds keys |user|"}},
		},
		{
			name: "an image changes",
			old:  base, new: edit(t, "image: web:1", "image: web:2"),
			rolls:  []string{"Deployment/web"},
			fields: map[string][]string{"Deployment/web": {"containers[web].image"}},
		},
		{
			// The API server stores an empty list as no list and a
			// container's resources: {} as none (a struct, not a pointer):
			// a chart that stops writing them rolls nothing.
			name: "empty lists and a container's empty resources are left out",
			old: edit(t, "image: web:1", "image: web:1\n        resources: {}\n        ports: []",
				"    spec:\n      containers:\n      - name: web", "    spec:\n      tolerations: []\n      containers:\n      - name: web"),
			new: base,
		},
		{
			// A field that is a Go map (omitempty) is stored without its
			// empty map; a struct written empty (affinity: {}, a pointer)
			// is stored as one: the Deployment rolls (TestClusterAgrees).
			name: "empty maps are left out",
			old: edit(t, "image: web:1", "image: web:1\n        resources: {limits: {}, requests: {}}",
				"    spec:\n      containers:\n      - name: web", "    spec:\n      nodeSelector: {}\n      containers:\n      - name: web"),
			new: base,
		},
		{
			// kubectl and Helm read YAML 1.1: yes and on are true, as
			// kustomize, which reads YAML 1.2, writes them through.
			name: "a boolean written as YAML 1.1 spells it",
			old:  edit(t, "volumeMounts: [{name: cfg, mountPath: /etc/app}]", "volumeMounts: [{name: cfg, mountPath: /etc/app, readOnly: yes}]\n        tty: on"),
			new:  edit(t, "volumeMounts: [{name: cfg, mountPath: /etc/app}]", "volumeMounts: [{name: cfg, mountPath: /etc/app, readOnly: true}]\n        tty: true"),
		},
		{
			// A field that is no pointer is stored without its zero value
			// (omitempty): false, 0 and "" are no field; a default then
			// fills one the API server defaults.
			name: "zero values written out",
			old:  base,
			new: edit(t, "    spec:\n      containers:\n      - name: web", "    spec:\n      hostNetwork: false\n      priorityClassName: \"\"\n      dnsPolicy: \"\"\n      containers:\n      - name: web",
				"        image: web:1\n", "        image: web:1\n        tty: false\n        readinessProbe: {tcpSocket: {port: 80}, initialDelaySeconds: 0}\n",
				"        env:\n", "        env:\n        - {name: EMPTY, value: \"\"}\n"),
			rolls:  []string{"Deployment/web"},
			fields: map[string][]string{"Deployment/web": {"containers[web].env", "containers[web].readinessProbe"}},
		},
		{
			name:   "affinity: {} left out",
			old:    edit(t, "    spec:\n      containers:\n      - name: web", "    spec:\n      affinity: {}\n      containers:\n      - name: web"),
			new:    base,
			rolls:  []string{"Deployment/web"},
			fields: map[string][]string{"Deployment/web": {"affinity"}},
		},
		{
			// Quantities are stored in their canonical form: 1000m is 1,
			// 1024Mi is 1Gi, and 1 is "1".
			name: "resources written another way, same quantities",
			old:  edit(t, "image: web:1", "image: web:1\n        resources: {limits: {cpu: 1000m, memory: 1024Mi}, requests: {cpu: 1}}"),
			new:  edit(t, "image: web:1", "image: web:1\n        resources: {limits: {cpu: \"1\", memory: 1Gi}, requests: {cpu: \"1\"}}"),
		},
		{
			name:   "resources written another way, another quantity",
			old:    edit(t, "image: web:1", "image: web:1\n        resources: {limits: {cpu: 1000m}}"),
			new:    edit(t, "image: web:1", "image: web:1\n        resources: {limits: {cpu: 1001m}}"),
			rolls:  []string{"Deployment/web"},
			fields: map[string][]string{"Deployment/web": {"containers[web].resources"}},
		},
		{
			// The API server's default pull policy: Always for latest or no
			// tag, IfNotPresent for another tag or a digest.
			name: "the default pull policy written out",
			old:  edit(t, "image: web:1", "image: web:latest", "image: api:1", "image: reg:5000/api@sha256:0123"),
			new: edit(t, "image: web:1", "image: web:latest\n        imagePullPolicy: Always",
				"image: api:1", "image: reg:5000/api@sha256:0123\n        imagePullPolicy: IfNotPresent"),
		},
		{
			name:   "another pull policy written out",
			old:    edit(t, "image: web:1", "image: reg:5000/web"),
			new:    edit(t, "image: web:1", "image: reg:5000/web\n        imagePullPolicy: IfNotPresent"),
			rolls:  []string{"Deployment/web"},
			fields: map[string][]string{"Deployment/web": {"containers[web].imagePullPolicy"}},
		},
		{
			// The order of containers and volumes is the pod template's:
			// the Deployment controller makes a new ReplicaSet
			// (TestClusterAgrees).
			name:   "volumes reordered",
			old:    edit(t, "      volumes:\n      - name: cfg", "      volumes:\n      - {name: tmp, emptyDir: {}}\n      - name: cfg"),
			new:    edit(t, "        configMap: {name: app, items: [{key: PORT, path: port}]}\n", "        configMap: {name: app, items: [{key: PORT, path: port}]}\n      - {name: tmp, emptyDir: {}}\n"),
			rolls:  []string{"Deployment/api"},
			fields: map[string][]string{"Deployment/api": {"volumes (order)"}},
		},
		{
			name: "containers reordered, one added between them",
			old:  edit(t, "      containers:\n      - name: web", "      containers:\n      - {name: proxy, image: proxy:1}\n      - name: web"),
			new: edit(t, "      containers:\n      - name: web", "      containers:\n      - {name: log, image: log:1}\n      - name: web",
				"          valueFrom: {configMapKeyRef: {name: app, key: PORT}}\n", "          valueFrom: {configMapKeyRef: {name: app, key: PORT}}\n      - {name: proxy, image: proxy:1}\n"),
			rolls:  []string{"Deployment/web"},
			fields: map[string][]string{"Deployment/web": {"containers[log]", "containers (order)"}},
		},
		{
			name:   "a container added first, the others in their order",
			old:    base,
			new:    edit(t, "      containers:\n      - name: web", "      containers:\n      - {name: log, image: log:1}\n      - name: web"),
			rolls:  []string{"Deployment/web"},
			fields: map[string][]string{"Deployment/web": {"containers[log]"}},
		},
		{
			name: "a CronJob's resources change",
			old:  base, new: edit(t, "image: report:1", "image: report:1\n            resources: {limits: {cpu: 100m}}"),
			rolls:  []string{"CronJob/report"},
			fields: map[string][]string{"CronJob/report": {"containers[report].resources"}},
		},
		{
			name:   "a label and a confighash annotation's value change",
			old:    edit(t, "labels: {app: web}", "labels: {app: web}\n      annotations: {confighash.dev/hash: before}"),
			new:    edit(t, "labels: {app: web}", "labels: {app: web, tier: front}\n      annotations: {confighash.dev/hash: whatever}"),
			rolls:  []string{"Deployment/web"},
			fields: map[string][]string{"Deployment/web": {"metadata.labels[tier]"}},
		},
		{
			name: "a Secret leaves the render",
			old:  base, new: strings.Replace(base, secretDoc, "", 1),
			rolls:   []string{"Deployment/api"},
			configs: map[string][]string{"Deployment/api": {"Secret/creds left-render ||"}},
		},
		{
			name: "an external Secret joins the render",
			old:  base, new: base + tokenDoc,
			rolls:   []string{"CronJob/report"},
			configs: map[string][]string{"CronJob/report": {"Secret/token joined-render ||"}},
		},
		{
			name: "new and removed workloads",
			old:  base, new: edit(t, "name: web, namespace", "name: web2, namespace"),
			status: map[string]rolldiff.Status{"Deployment/web": rolldiff.StatusRemoved, "Deployment/web2": rolldiff.StatusNew},
		},
		{
			name: "a workload opted out changes its image, not its config",
			old:  edit(t, "name: web, namespace: shop}", "name: web, namespace: shop, annotations: {confighash.dev/enabled: \"false\"}}"),
			new: edit(t, "name: web, namespace: shop}", "name: web, namespace: shop, annotations: {confighash.dev/enabled: \"false\"}}",
				"LOG_LEVEL: info", "LOG_LEVEL: debug", "image: web:1", "image: web:2"),
			rolls:  []string{"Deployment/web"},
			fields: map[string][]string{"Deployment/web": {"containers[web].image"}},
		},
		{
			name: "a kustomize hash-suffixed ConfigMap is renamed",
			old: edit(t, "name: app, namespace", "name: app-5m2b4c8tk9, namespace", "name: app, key: LOG_LEVEL", "name: app-5m2b4c8tk9, key: LOG_LEVEL",
				"name: app, key: PORT", "name: app-5m2b4c8tk9, key: PORT", "name: app, items", "name: app-5m2b4c8tk9, items"),
			new: edit(t, "name: app, namespace", "name: app-7gkm9t2b6d, namespace", "name: app, key: LOG_LEVEL", "name: app-7gkm9t2b6d, key: LOG_LEVEL",
				"name: app, key: PORT", "name: app-7gkm9t2b6d, key: PORT", "name: app, items", "name: app-7gkm9t2b6d, items", "LOG_LEVEL: info", "LOG_LEVEL: debug"),
			rolls: []string{"Deployment/api", "Deployment/web"},
			configs: map[string][]string{
				"Deployment/web": {"ConfigMap/app-7gkm9t2b6d renamed ||LOG_LEVEL"},
				"Deployment/api": {"ConfigMap/app-7gkm9t2b6d renamed ||"},
			},
		},
		{
			// Both names outside the render: the pod template names
			// another object, which the template diff says.
			name:   "an external hash-suffixed Secret is renamed",
			old:    edit(t, "name: token, key", "name: token-5m2b4c8tk9, key"),
			new:    edit(t, "name: token, key", "name: token-7gkm9t2b6d, key"),
			rolls:  []string{"CronJob/report"},
			fields: map[string][]string{"CronJob/report": {"containers[report].env"}},
		},
		{
			// The same while a key it reads in the render changes: the
			// renamed reference is still a template change.
			name: "an external hash-suffixed Secret is renamed and a key read in the render changes",
			old:  edit(t, "name: token, key: value}}", "name: token-5m2b4c8tk9, key: value}}\n            - name: SPARE\n              valueFrom: {configMapKeyRef: {name: app, key: UNUSED}}"),
			new: edit(t, "name: token, key: value}}", "name: token-7gkm9t2b6d, key: value}}\n            - name: SPARE\n              valueFrom: {configMapKeyRef: {name: app, key: UNUSED}}",
				"UNUSED: x", "UNUSED: z"),
			rolls:   []string{"CronJob/report"},
			configs: map[string][]string{"CronJob/report": {"ConfigMap/app keys ||UNUSED"}},
			fields:  map[string][]string{"CronJob/report": {"containers[report].env"}},
		},
		{
			// helm template prints hooks; Helm 3's post-renderer saw none
			// and recorded the hook's ConfigMap as external. diff reads it
			// as helm template | confighash would hash it.
			name: "a Helm hook's ConfigMap, external under Helm 3's post-renderer, changes",
			old:  helmHook, new: strings.Replace(helmHook, "k: a", "k: b", 1),
			rolls:   []string{"Deployment/hk"},
			configs: map[string][]string{"Deployment/hk": {"ConfigMap/hook-cfg keys ||k"}},
		},
		{
			// The names kustomize will give them are the ones the hash
			// covers; the content is read under them, key by key.
			name: "a kustomize function's input: a key the workload does not read",
			old:  krmInput, new: strings.Replace(krmInput, "LOG_LEVEL: info", "LOG_LEVEL: debug", 1),
			rolls:   []string{"Deployment/web"},
			configs: map[string][]string{"Deployment/web": {"ConfigMap/app-65hdf8f2c2 renamed ||"}},
		},
		{
			name: "a kustomize function's input: a key the workload reads",
			old:  krmInput, new: strings.Replace(krmInput, `PORT: "80"`, `PORT: "81"`, 1),
			rolls:   []string{"Deployment/web"},
			configs: map[string][]string{"Deployment/web": {"ConfigMap/app-g9884bk77d renamed ||PORT"}},
		},
		{
			name: "a kustomize function's input: a Secret consumed whole",
			old:  krmInput, new: strings.Replace(krmInput, "password: hunter2-secret-value", "password: hunter2-secret-value, user: admin", 1),
			rolls:   []string{"Deployment/web"},
			configs: map[string][]string{"Deployment/web": {"Secret/creds-dm2fmbtgh7 renamed user||"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := compare(t, tc.old, tc.new, inject.Options{})
			ids := byID(res)
			var rolls []string
			for id, w := range ids {
				if w.Status == rolldiff.StatusRolls {
					rolls = append(rolls, id)
					assert.NotEmpty(t, w.Reasons, "%s rolls without a reason", id)
				}
				if want, ok := tc.status[id]; ok {
					assert.Equal(t, want, w.Status, id)
				} else if w.Status != rolldiff.StatusRolls {
					assert.Equal(t, rolldiff.StatusUnchanged, w.Status, id)
				}
				var configs []string
				for _, c := range w.Configs {
					configs = append(configs, c.Kind+"/"+c.Name+" "+c.Change+" "+strings.Join(c.Added, ",")+"|"+strings.Join(c.Removed, ",")+"|"+strings.Join(c.Changed, ","))
				}
				assert.Equal(t, tc.configs[id], configs, "config changes of %s", id)
				var fields []string
				for _, f := range w.Template {
					fields = append(fields, f.Path)
				}
				assert.Equal(t, tc.fields[id], fields, "template changes of %s", id)
			}
			assert.ElementsMatch(t, tc.rolls, rolls)
			assert.Equal(t, len(tc.rolls), res.Rolling)
			assert.Equal(t, len(tc.rolls)+len(tc.status) > 0, res.Changed())
			assert.True(t, strings.HasPrefix(res.Summary, fmt.Sprintf("%d of %d ", len(tc.rolls), res.Total)), res.Summary)

			// Names only: no value of the inputs reaches any output.
			var out bytes.Buffer
			require.NoError(t, rolldiff.WriteText(&out, res))
			require.NoError(t, rolldiff.WriteMarkdown(&out, res))
			require.NoError(t, json.NewEncoder(&out).Encode(res))
			for _, secret := range []string{"hunter2", "t0ken", "debug", "admin"} {
				assert.NotContains(t, out.String(), secret)
			}
		})
	}
}

// TestStaleHash: renders that carry confighash's annotations are compared
// on content, and an annotation that does not match it is reported.
func TestStaleHash(t *testing.T) {
	rendered := render(t, base, inject.Options{})
	// The new render edits the ConfigMap without rendering again: its
	// annotations are those of the old content.
	edited := strings.Replace(rendered, "LOG_LEVEL: info", "LOG_LEVEL: debug", 1)
	res := compare(t, rendered, edited, inject.Options{})
	web := byID(res)["Deployment/web"]
	assert.Equal(t, rolldiff.StatusRolls, web.Status)
	require.Len(t, web.StaleHashes, 1)
	assert.Equal(t, "new", web.StaleHashes[0].Render)
	assert.Equal(t, web.OldHash, web.StaleHashes[0].Found)
	assert.Equal(t, web.NewHash, web.StaleHashes[0].Computed)
	assert.Empty(t, web.Template, "confighash's annotations are not template changes")
	for id, w := range byID(res) {
		if id != "Deployment/web" {
			assert.Empty(t, w.StaleHashes, id)
		}
	}
	assert.Contains(t, res.Summary, "1 with a hash annotation that does not match its content")
}

// TestResourceListInput: a KRM ResourceList is read as its items.
func TestResourceListInput(t *testing.T) {
	list := testtools.ResourceList(base, "")
	res := compare(t, list, edit(t, "LOG_LEVEL: info", "LOG_LEVEL: debug"), inject.Options{})
	assert.Equal(t, 3, res.Total)
	assert.Equal(t, 1, res.Rolling)
	assert.Equal(t, rolldiff.StatusRolls, byID(res)["Deployment/web"].Status)
}

// TestItemsAsTheRenderReadsThem: diff reads the objects the render reads
// and leaves out those it leaves out. In a ResourceList, a local-config
// ConfigMap is input to kustomize and kpt only, never applied: an edit of
// it rolls nothing. A typed list's items that name no kind are created as
// the list's kind: an edit of such a ConfigMap rolls its consumers.
func TestItemsAsTheRenderReadsThem(t *testing.T) {
	const app = "metadata: {name: app, namespace: shop}\n"
	local := strings.Replace(base, app, "metadata: {name: app, namespace: shop, annotations: {config.kubernetes.io/local-config: \"true\"}}\n", 1)
	require.NotEqual(t, base, local)
	res := compare(t, testtools.ResourceList(local, ""), testtools.ResourceList(strings.Replace(local, "LOG_LEVEL: info", "LOG_LEVEL: debug", 1), ""), inject.Options{})
	assert.Equal(t, 0, res.Rolling, res.Summary)
	assert.NotEqual(t, rolldiff.StatusRolls, byID(res)["Deployment/web"].Status)

	typed := strings.Replace(base, "apiVersion: v1\nkind: ConfigMap\n"+app+"data: {LOG_LEVEL: info, UNUSED: x, PORT: \"80\"}",
		"apiVersion: v1\nkind: ConfigMapList\nitems:\n- "+app+"  data: {LOG_LEVEL: info, UNUSED: x, PORT: \"80\"}", 1)
	require.NotEqual(t, base, typed)
	res = compare(t, typed, strings.Replace(typed, "LOG_LEVEL: info", "LOG_LEVEL: debug", 1), inject.Options{})
	assert.Equal(t, 1, res.Rolling, res.Summary)
	assert.Equal(t, rolldiff.StatusRolls, byID(res)["Deployment/web"].Status)
}

// TestSOPSEncryptedSecrets: a Secret encrypted with SOPS, whose data is
// ciphertext the render cannot read, is external to the render, as
// confighash reads it when it hashes: a new ciphertext of it rolls nothing
// at render time (the controller rolls its readers when Flux applies it
// decrypted), and a change of the ConfigMap beside it rolls the reader.
func TestSOPSEncryptedSecrets(t *testing.T) {
	b, err := os.ReadFile("../../testdata/fn/sops-encrypted/input.yaml")
	require.NoError(t, err)
	in := string(b)
	reencrypted := strings.ReplaceAll(in, "data:bm90IGEgcmVhbCBjaXBoZXJ0ZXh0", "data:YW5vdGhlciBjaXBoZXJ0ZXh0")
	require.NotEqual(t, in, reencrypted)
	res := compare(t, render(t, in, inject.Options{}), render(t, reencrypted, inject.Options{}), inject.Options{})
	assert.Equal(t, 0, res.Rolling, res.Summary)
	res = compare(t, render(t, in, inject.Options{}), render(t, strings.Replace(in, "#34577c", "#000000", 1), inject.Options{}), inject.Options{})
	assert.Equal(t, 1, res.Rolling, res.Summary)
	assert.Equal(t, rolldiff.StatusRolls, byID(res)["Deployment/podinfo"].Status)
}

// TestKeyedHashes: with an HMAC key the hashes are keyed, and the diff is
// the same.
func TestKeyedHashes(t *testing.T) {
	res := compare(t, base, edit(t, "LOG_LEVEL: info", "LOG_LEVEL: debug"), inject.Options{Key: []byte("k3y")})
	web := byID(res)["Deployment/web"]
	assert.Equal(t, rolldiff.StatusRolls, web.Status)
	assert.NotEqual(t, web.OldHash, web.NewHash)
	plain := byID(compare(t, base, base, inject.Options{}))["Deployment/web"]
	assert.NotEqual(t, plain.OldHash, web.OldHash, "keyed hash differs from the plain one")
}

// TestConfighashAddedOrRemoved: a render made with confighash compared with
// one made without it (confighash added to, or taken out of, a pipeline).
// Applying it adds or removes the hash annotation on the pod template of
// each workload that consumes a config of the render, which restarts its
// pods; a workload with nothing to hash, or two renders that both carry
// the annotations, roll nothing for it.
func TestConfighashAddedOrRemoved(t *testing.T) {
	hashed := render(t, base, inject.Options{})
	keyed := render(t, base, inject.Options{Key: []byte("a key of the test")})
	hashAnn := "metadata.annotations[confighash.dev/hash]"
	keyIDAnn := "metadata.annotations[confighash.dev/key-id]"
	tests := []struct {
		name     string
		old, cur string
		opts     inject.Options
		want     map[string][]string // workload: template paths; absent: unchanged
	}{
		{"added", base, hashed, inject.Options{}, map[string][]string{"Deployment/web": {hashAnn}, "Deployment/api": {hashAnn}}},
		{"removed", hashed, base, inject.Options{}, map[string][]string{"Deployment/web": {hashAnn}, "Deployment/api": {hashAnn}}},
		{"both hashed", hashed, hashed, inject.Options{}, nil},
		{"neither hashed", base, base, inject.Options{}, nil},
		{"keyed added", base, keyed, inject.Options{Key: []byte("a key of the test")},
			map[string][]string{"Deployment/web": {hashAnn, keyIDAnn}, "Deployment/api": {hashAnn, keyIDAnn}}},
		{"plain to keyed", hashed, keyed, inject.Options{Key: []byte("a key of the test")},
			map[string][]string{"Deployment/web": {keyIDAnn}, "Deployment/api": {keyIDAnn}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := byID(compare(t, tt.old, tt.cur, tt.opts))
			for _, id := range []string{"Deployment/web", "Deployment/api", "CronJob/report"} {
				w := got[id]
				want, rolls := tt.want[id]
				if !rolls {
					assert.Equal(t, rolldiff.StatusUnchanged, w.Status, "%s: %v", id, w.Template)
					continue
				}
				assert.Equal(t, rolldiff.StatusRolls, w.Status, id)
				var paths []string
				for _, f := range w.Template {
					paths = append(paths, f.Path)
				}
				assert.ElementsMatch(t, want, paths, id)
				assert.NotEmpty(t, w.Reasons, id)
			}
		})
	}
}

// TestStaleHashCause: a hash annotation made in another mode than the
// diff's (an HMAC key the diff was not given, none where it has one, or
// another key) is told apart from a render whose configs changed after
// the hash was written, and the table says what to pass.
func TestStaleHashCause(t *testing.T) {
	keyA, keyB := []byte("key A of the test"), []byte("key B of the test")
	withKey := func(key []byte) string { return render(t, base, inject.Options{Key: key}) }
	// renderIn renders base without its namespaces, as Helm's post-renderer
	// does a chart's objects, with --namespace ns.
	renderIn := func(ns string) string {
		return render(t, strings.ReplaceAll(base, ", namespace: shop}", "}"), inject.Options{DefaultNamespace: ns})
	}
	tests := []struct {
		name     string
		rendered string
		opts     inject.Options
		cause    hashing.Mismatch
		why      string
	}{
		{"keyed render, diff without a key", withKey(keyA), inject.Options{}, hashing.MismatchKeyed, "made with an HMAC key: pass it with --hmac-key-file"},
		{"plain render, diff with a key", withKey(nil), inject.Options{Key: keyA}, hashing.MismatchUnkeyed, "made without an HMAC key"},
		{"render with another key", withKey(keyA), inject.Options{Key: keyB}, hashing.MismatchOtherKey, "made with another HMAC key (key-id " + hashing.KeyID(keyA) + ")"},
		{"configs edited after the render", strings.Replace(withKey(nil), "LOG_LEVEL: info", "LOG_LEVEL: debug", 1), inject.Options{}, "", "does not match its content"},
		{"a render given --namespace, diff none", renderIn("shop"), inject.Options{}, "", "the workload names no namespace: if the render was given --namespace (Helm's release namespace), give diff the same"},
		// A kustomize base rendered with confighash, opted out in an overlay
		// that does not list it.
		{"opted out after the render", strings.Replace(withKey(nil), "name: web, namespace: shop}", "name: web, namespace: shop, annotations: {confighash.dev/enabled: \"false\"}}", 1), inject.Options{}, "",
			"the workload opts out: confighash ran before the opt-out and not after it, which would remove the hash"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := compare(t, tc.rendered, tc.rendered, tc.opts)
			web := byID(res)["Deployment/web"]
			require.Len(t, web.StaleHashes, 2, "both renders")
			for _, s := range web.StaleHashes {
				assert.Equal(t, tc.cause, s.Cause, s.Render)
			}
			why := strings.Join(web.Why(), "\n")
			assert.Contains(t, why, tc.why)
			if strings.Contains(tc.rendered, "namespace: shop") {
				assert.NotContains(t, why, "names no namespace", "a workload that names its namespace")
			}
			assert.Contains(t, res.Summary, tc.why)
		})
	}
}

// TestRenameReason: a kustomize hash-suffix rename says "renamed", the two
// names, and which consumed keys caused it, if any.
func TestRenameReason(t *testing.T) {
	named := func(suffix string, pairs ...string) string {
		n := "app-" + suffix
		return edit(t, append([]string{"name: app, namespace", "name: " + n + ", namespace", "name: app, key: LOG_LEVEL", "name: " + n + ", key: LOG_LEVEL",
			"name: app, key: PORT", "name: " + n + ", key: PORT", "name: app, items", "name: " + n + ", items"}, pairs...)...)
	}
	res := compare(t, named("5m2b4c8tk9"), named("7gkm9t2b6d", "LOG_LEVEL: info", "LOG_LEVEL: debug"), inject.Options{})
	assert.Equal(t, []string{"ConfigMap shop/app-5m2b4c8tk9 renamed to app-7gkm9t2b6d: key LOG_LEVEL changed"}, byID(res)["Deployment/web"].Reasons)
	assert.Equal(t, []string{"ConfigMap shop/app-5m2b4c8tk9 renamed to app-7gkm9t2b6d: no consumed key changed"}, byID(res)["Deployment/api"].Reasons)
}

// TestReadAsTheAPIServerStores: diff reads a render as the render does (and
// kubectl and the API server): anchors, aliases and merge keys expanded, a
// key written twice refused naming the file, document and key, in a plain
// stream and in a ResourceList's items. Before, diff refused a render with a
// merge key in a ConfigMap that the render had hashed ("data.<<: expected a
// string, found an alias") and compared renders holding a key twice that the
// render and kubectl refuse.
func TestReadAsTheAPIServerStores(t *testing.T) {
	merged := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: shop\n  labels: &common {LOG_LEVEL: info}\n" +
		"data:\n  <<: *common\n  UNUSED: x\n  PORT: \"80\"\n"
	withMerge := strings.Replace(base, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: shop}\ndata: {LOG_LEVEL: info, UNUSED: x, PORT: \"80\"}\n", merged, 1)
	require.NotEqual(t, base, withMerge)
	for _, tc := range []struct {
		name, text string
	}{
		{"merge key", withMerge},
		{"alias", strings.Replace(base, "stringData: {password: hunter2-secret-value}", "metadata2: &pw {password: hunter2-secret-value}\nstringData: *pw", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := compare(t, render(t, tc.text, inject.Options{}), render(t, base, inject.Options{}), inject.Options{})
			assert.Equal(t, 0, res.Rolling, "the same content as base: %s", res.Summary)
			assert.Empty(t, byID(res)["Deployment/web"].StaleHashes, "the render's hash is diff's")
			res = compare(t, tc.text, edit(t, "LOG_LEVEL: info", "LOG_LEVEL: debug"), inject.Options{})
			assert.Equal(t, rolldiff.StatusRolls, byID(res)["Deployment/web"].Status, res.Summary)
		})
	}

	// How a stream may start and end: the same render.
	for name, text := range map[string]string{
		"a leading ---":                 "---\n" + base,
		"a trailing --- and no newline": base + "---",
		"a trailing ---":                base + "---\n",
		"a trailing ...":                base + "...\n",
		"a comment after ---":           strings.Replace(base, "\n---\n", "\n--- # the Secret\n", 1),
		"CRLF":                          strings.ReplaceAll(base, "\n", "\r\n"),
	} {
		t.Run(name, func(t *testing.T) {
			res := compare(t, base, text, inject.Options{})
			assert.Equal(t, 3, res.Total, res.Summary)
			assert.Equal(t, 0, res.Rolling+res.New+res.Removed, res.Summary)
		})
	}

	twice := strings.Replace(base, "kind: Secret\n", "kind: Secret\nstringData: {password: other-secret-value}\n", 1)
	const web = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web"
	_, webOnward, found := strings.Cut(base, web)
	require.True(t, found)
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		// Lines are the file's, counted from its first line.
		{"key twice at the top, stream", twice, []string{"new: document 1", fmt.Sprintf(`key "stringData" appears twice (lines %d and %d)`,
			fileLine(twice, strings.Index(twice, "stringData:")), fileLine(twice, strings.LastIndex(twice, "stringData:")))}},
		{"key twice at the top, ResourceList", testtools.ResourceList(twice, ""), []string{"new: ResourceList items[1]", `key "stringData" appears twice`}},
		{"key twice in metadata, stream", strings.Replace(base, "metadata: {name: creds, namespace: shop}", "metadata: {name: creds, namespace: shop, name: other}", 1),
			[]string{"new: document 1", `metadata: key "name" appears twice`}},
		{"a document after \"...\" with no \"---\"", strings.Replace(base, "\n---\napiVersion: apps/v1", "\n...\napiVersion: apps/v1", 1),
			[]string{"new: reading the render: document 1", `another document follows this one without a "---" line`}},
		{"a JSON stream", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}` + "\n" + `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}` + "\n",
			[]string{"new: reading the render: document 0", `another document follows this one without a "---" line`}},
		{"malformed YAML in the third document", strings.Replace(base, "kind: Deployment\nmetadata: {name: web, namespace: shop}", "kind: Deployment\nmetadata: {name: web, namespace: shop", 1),
			[]string{"new: reading the render: document 2", fmt.Sprintf("yaml: line %d: did not find expected ',' or '}'", fileLine(base, strings.Index(base, "metadata: {name: web, namespace: shop}")))}},
		{"a field of the wrong type in the third document", strings.Replace(base, "image: web:1\n", "image: web:1\n        envFrom: [{configMapRef: {name: 1}}]\n", 1),
			[]string{"new: Deployment shop/web (document 2)", fmt.Sprintf("line %d: containers[0].envFrom[0].configMapRef.name: expected a string", fileLine(base, strings.Index(base, "image: web:1"))+1)}},
		{"a workload twice", base + "---\n" + web + webOnward, []string{"new: Deployment shop/web is in the render twice (documents 2 and "}},
		{"key twice in a pod template, ResourceList", testtools.ResourceList(strings.Replace(base, "        image: web:1\n", "        image: web:1\n        image: web:2\n", 1), ""),
			[]string{"new: ResourceList items[2]", `key "image" appears twice`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rolldiff.Read("new", []byte(tc.text), inject.Options{})
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "secret-value")
		})
	}
}

// TestJobNotes: a Job's pods run once; an existing Job is not run again
// when its config changes, and the API server refuses any change of its pod
// template. diff says so next to a Job it lists.
func TestJobNotes(t *testing.T) {
	job := `apiVersion: v1
kind: ConfigMap
metadata: {name: app, namespace: shop}
data: {MODE: a}
---
` + kubetest.Workload{Kind: "Job", Name: "migrate", Namespace: "shop", EnvFrom: []string{"{configMapRef: {name: app}}"}}.YAML()
	out, r, err := postrenderer.Process([]byte(job), inject.Options{})
	require.NoError(t, err)
	first, hash := string(out), r.Workloads[0].Hash
	oldLayout := strings.Replace(job, "metadata: {labels: {app: migrate}}", "metadata: {labels: {app: migrate}, annotations: {confighash.dev/hash: "+hash+"}}", 1)
	require.NotEqual(t, job, oldLayout)
	const runsOnlyWhenRecreated = "a Job: applying this changes its hash annotation only, it runs nothing again; the Job runs with the new config when it is re-created (Helm re-creates hook Jobs; delete a regular one to run it again)"
	const refused = "a Job: the API server refuses any change of an existing Job's pod template, so delete the Job before applying this (Helm re-creates hook Jobs)"
	for _, tt := range []struct {
		name, old, cur string
		status         rolldiff.Status
		want, not      []string
	}{
		{"its config changes", first, render(t, strings.Replace(job, "MODE: a", "MODE: b", 1), inject.Options{}), rolldiff.StatusRolls,
			[]string{"ConfigMap shop/app key MODE changed", runsOnlyWhenRecreated}, []string{refused}},
		{"its image changes", first, render(t, strings.Replace(job, "migrate:1", "migrate:2", 1), inject.Options{}), rolldiff.StatusRolls,
			[]string{"image", refused}, []string{runsOnlyWhenRecreated}},
		// A render of an earlier confighash, then one of this version.
		{"the hash leaves its pod template", oldLayout, first, rolldiff.StatusRolls,
			[]string{"pod template changed: metadata.annotations[confighash.dev/hash]", refused}, []string{runsOnlyWhenRecreated}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := compare(t, tt.old, tt.cur, inject.Options{})
			w := byID(res)["Job/migrate"]
			assert.Equal(t, tt.status, w.Status)
			var text bytes.Buffer
			require.NoError(t, rolldiff.WriteText(&text, res))
			for _, s := range tt.want {
				assert.Contains(t, text.String(), s)
			}
			for _, s := range tt.not {
				assert.NotContains(t, text.String(), s)
			}
		})
	}
}
