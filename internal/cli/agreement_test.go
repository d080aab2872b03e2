package cli_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/cli"
	"github.com/confighash/confighash/internal/testing/benchgen"
	"github.com/confighash/confighash/internal/testing/kubetest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// kinds is a render of every kind of workload the render hashes, in a
// namespace of its own and in none, reading configs whole and by key, one
// opted out: for TestCommandsAgree.
func kinds() string {
	workloads := []kubetest.Workload{
		{Name: "web", Namespace: "shop", Env: []string{kubetest.EnvKey("app", "LOG_LEVEL")}, EnvFrom: []string{"{secretRef: {name: creds}}"}},
		{Kind: "StatefulSet", Name: "db", Namespace: "shop", EnvFrom: []string{"{configMapRef: {name: app}}"}},
		{Kind: "DaemonSet", Name: "agent", Env: []string{kubetest.EnvKey("local", "A")}},
		{Kind: "CronJob", Name: "report", Namespace: "shop", Env: []string{"{name: P, valueFrom: {secretKeyRef: {name: creds, key: password}}}"}},
		{Kind: "Job", Name: "migrate", Namespace: "shop", EnvFrom: []string{"{configMapRef: {name: app}}"}},
		{Name: "legacy", Namespace: "shop", Annotations: map[string]string{"confighash.dev/enabled": "false"}, EnvFrom: []string{"{configMapRef: {name: app}}"}},
		{Name: "outside", Namespace: "shop", EnvFrom: []string{"{configMapRef: {name: not-rendered}}", "{configMapRef: {name: app}}"}},
	}
	docs := []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: shop}\ndata: {LOG_LEVEL: info, PORT: \"80\", UNUSED: x}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: shop}\ndata: {password: " + base64.StdEncoding.EncodeToString([]byte("agreement-canary")) + ", user: YWRtaW4=}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local}\ndata: {A: \"1\", B: \"2\"}\n",
	}
	for _, w := range workloads {
		docs = append(docs, w.YAML())
	}
	return strings.Join(docs, "---\n")
}

// agreed is one workload as the commands report it: the hash the render
// wrote, and what explain and diff say.
type agreed struct {
	Workload string `json:"workload"`
	Hash     string `json:"hash"`
	Current  string `json:"current"`
	OptedOut bool   `json:"optedOut"`
}

type diffed struct {
	Summary   string `json:"summary"`
	Workloads []struct {
		Kind, Namespace, Name string
		Status                string `json:"status"`
		OldHash               string `json:"oldHash"`
		NewHash               string `json:"newHash"`
		Configs               []struct {
			Name   string `json:"name"`
			Change string `json:"change"`
		} `json:"configs"`
		Template []struct {
			Path string `json:"path"`
		} `json:"template"`
		StaleHashes []struct {
			Render string `json:"render"`
		} `json:"staleHashes"`
	} `json:"workloads"`
}

// commands runs confighash in-process with flags, each input a file of
// dir.
type commands struct {
	t     *testing.T
	dir   string
	flags []string
	files int
}

func (c *commands) file(content []byte) string {
	c.files++
	name := filepath.Join(c.dir, fmt.Sprintf("%d.yaml", c.files))
	require.NoError(c.t, os.WriteFile(name, content, 0o600))
	return name
}

func (c *commands) run(stdin []byte, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	args = append(args, c.flags...)
	code := cli.Run(args, cli.IO{In: bytes.NewReader(stdin), Out: &out, Err: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

func (c *commands) render(input []byte) []byte {
	code, out, errOut := c.run(input, "--quiet")
	require.Equal(c.t, 0, code, errOut)
	return []byte(out)
}

// explain is explain --json of a render, by workload.
func (c *commands) explain(render []byte) map[string]agreed {
	code, out, errOut := c.run(nil, "explain", "--json", "--quiet", c.file(render))
	require.Equal(c.t, 0, code, errOut)
	var list []agreed
	require.NoError(c.t, json.Unmarshal([]byte(out), &list))
	m := map[string]agreed{}
	for _, a := range list {
		m[a.Workload] = a
	}
	return m
}

func (c *commands) diff(old, cur []byte) diffed {
	code, out, errOut := c.run(nil, "diff", "--json", c.file(old), c.file(cur))
	require.Equal(c.t, 0, code, errOut)
	var d diffed
	require.NoError(c.t, json.Unmarshal([]byte(out), &d))
	return d
}

// mutation is what mutate changed: the workloads whose pod template it
// edited (an image), as Kind/name.
type mutation struct {
	images map[string]bool
}

// mutate edits one to four things of a stream, keeping its documents in
// their order: a config key's value, a key added or removed, a whole config
// emptied, or a workload's image. Every document is written anew.
func mutate(t *testing.T, r *rand.Rand, input []byte) ([]byte, mutation) {
	nodes, err := kio.FromBytes(input)
	require.NoError(t, err)
	m := mutation{images: map[string]bool{}}
	var configs, workloads []*yaml.RNode
	for _, n := range nodes {
		if kind := n.GetKind(); kind == "ConfigMap" || kind == "Secret" {
			configs = append(configs, n)
		} else if slices.Contains([]string{"Deployment", "StatefulSet", "DaemonSet"}, kind) {
			workloads = append(workloads, n)
		}
	}
	for range 1 + r.IntN(4) {
		if r.IntN(4) == 0 && len(workloads) > 0 {
			w := workloads[r.IntN(len(workloads))]
			image, err := w.Pipe(yaml.Lookup("spec", "template", "spec", "containers", "0", "image"))
			require.NoError(t, err)
			if image != nil {
				image.YNode().Value += "-next"
				m.images[w.GetKind()+"/"+w.GetName()] = true
			}
			continue
		}
		if len(configs) == 0 {
			continue
		}
		n := configs[r.IntN(len(configs))]
		field, encode := "data", n.GetKind() == "Secret"
		if sd, _ := n.Pipe(yaml.Lookup("stringData")); sd != nil {
			field, encode = "stringData", false
		}
		data, err := n.Pipe(yaml.LookupCreate(yaml.MappingNode, field))
		require.NoError(t, err)
		keys, err := data.Fields()
		require.NoError(t, err)
		value := fmt.Sprintf("mutated-%d", r.Uint32())
		if encode {
			value = base64.StdEncoding.EncodeToString([]byte(value))
		}
		switch op := r.IntN(4); {
		case op == 0 && len(keys) > 0:
			require.NoError(t, data.PipeE(yaml.SetField(keys[r.IntN(len(keys))], yaml.NewStringRNode(value))))
		case op == 1 && len(keys) > 0:
			require.NoError(t, data.PipeE(yaml.Clear(keys[r.IntN(len(keys))])))
		case op == 2:
			for _, k := range keys {
				require.NoError(t, data.PipeE(yaml.Clear(k)))
			}
		default:
			require.NoError(t, data.PipeE(yaml.SetField(fmt.Sprintf("added.%d", r.IntN(3)), yaml.NewStringRNode(value))))
		}
	}
	out, err := kio.StringAll(nodes)
	require.NoError(t, err)
	return []byte(out), m
}

// spliced is the render old with the ConfigMaps and Secrets of the render
// cur: what a pipeline applies when the configs changed after confighash
// ran. Both renders hold the same documents in the same order.
func spliced(t *testing.T, old, cur []byte) []byte {
	o, err := kio.FromBytes(old)
	require.NoError(t, err)
	c, err := kio.FromBytes(cur)
	require.NoError(t, err)
	require.Len(t, c, len(o))
	for i, n := range o {
		require.Equal(t, n.GetKind()+n.GetName(), c[i].GetKind()+c[i].GetName(), "document %d", i)
		if k := n.GetKind(); k == "ConfigMap" || k == "Secret" {
			o[i] = c[i]
		}
	}
	out, err := kio.StringAll(o)
	require.NoError(t, err)
	return []byte(out)
}

// asJSONList is a render as kubectl get -o json prints it: one v1 List,
// whose items are no lists (a ConfigMapList's items are items of their own).
func asJSONList(t *testing.T, render []byte) []byte {
	nodes, err := kio.FromBytes(render)
	require.NoError(t, err)
	var items []any
	for _, n := range nodes {
		var obj map[string]any
		require.NoError(t, sigsyaml.Unmarshal([]byte(n.MustString()), &obj))
		if inner, ok := obj["items"].([]any); ok && strings.HasSuffix(n.GetKind(), "List") {
			items = append(items, inner...)
			continue
		}
		items = append(items, obj)
	}
	b, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items}, "", "    ")
	require.NoError(t, err)
	return b
}

// TestCommandsAgree: the render, explain, verify and diff, run as a user
// runs them, say the same thing about the same renders, over the corpus, a
// generated stream and every workload kind, with and without --namespace
// and an HMAC key, and random edits of configs and images:
//   - explain and verify find the render's own hashes current;
//   - diff of the renders and diff of the inputs without confighash's
//     annotations give every workload the same status and hashes, and those
//     hashes are the ones the render wrote; the same renders as JSON Lists
//     (kubectl get -o json) give the same diff;
//   - a workload rolls because of its config (diff's hashes differ) exactly
//     when the hash the render wrote differs between the two renders;
//   - the old render with the new configs (configs changed after the render)
//     fails verify exactly for the workloads whose hash changed, explain
//     finds exactly those stale, and diff reports exactly their hashes as
//     not matching their content, and rolls exactly the workloads whose image
//     changed against the new render.
func TestCommandsAgree(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, []byte("an HMAC key for the agreement test"), 0o600))
	modes := map[string][]string{"plain": nil, "namespace": {"--namespace", "shop"}, "keyed": {"--hmac-key-file", keyFile, "--namespace", "shop"}}
	type input struct {
		name   string
		stream []byte
		modes  []string
		rounds int
	}
	inputs := []input{
		{"kinds", []byte(kinds()), []string{"plain", "namespace", "keyed"}, 8},
		{"generated", benchgen.Stream(benchgen.Spec{Deployments: 30, ConfigMaps: 20, Secrets: 8, ConfigMapBytes: 200}), []string{"plain", "keyed"}, 8},
	}
	if os.Getenv("CONFIGHASH_CORPUS") != "" {
		// Fewer rounds: each command reads 1.9 MB of Argo CD.
		argo, err := os.ReadFile(filepath.Join(testtools.Corpus(t), "argo-cd", "install.yaml"))
		require.NoError(t, err)
		inputs = append(inputs, input{"argo-cd", argo, []string{"keyed"}, 3},
			input{"kube-prometheus", testtools.Stream(testtools.CorpusFiles(t, "kube-prometheus")), []string{"plain"}, 4})
	}
	for _, in := range inputs {
		for _, mode := range in.modes {
			t.Run(in.name+"/"+mode, func(t *testing.T) {
				input := in.stream
				c := &commands{t: t, dir: t.TempDir(), flags: modes[mode]}
				r := rand.New(rand.NewPCG(uint64(len(input)), uint64(len(mode))))
				base := c.render(input)
				baseExplain := c.explain(base)
				for id, a := range baseExplain {
					if !a.OptedOut {
						assert.Equal(t, a.Hash, a.Current, "%s: explain finds the render's own hash current", id)
					}
				}
				code, out, errOut := c.run(nil, "verify", c.file(base))
				require.Equal(t, 0, code, "verify of the render: %s", errOut)
				assert.Contains(t, out, "ok: ")
				var byConfig, stale int
				for round := range in.rounds {
					edited, m := mutate(t, r, input)
					next := c.render(edited)
					nextExplain := c.explain(next)

					rendered := c.diff(base, next)
					assert.Equal(t, rendered, c.diff(input, edited), "round %d: diff of the inputs and of their renders", round)
					assert.Equal(t, rendered, c.diff(asJSONList(t, base), asJSONList(t, next)), "round %d: diff of the renders as JSON Lists", round)
					var hashChanged, imageOnly []string
					for _, w := range rendered.Workloads {
						id := w.Kind + " " + strings.TrimPrefix(w.Namespace+"/"+w.Name, "/")
						before, after := baseExplain[id], nextExplain[id]
						assert.Empty(t, w.StaleHashes, "%s: a render's own hash", id)
						image := m.images[w.Kind+"/"+w.Name]
						if image {
							assert.Equal(t, "rolls", w.Status, "round %d: %s: its image changed", round, id)
							imageOnly = append(imageOnly, id)
						}
						if before.OptedOut {
							continue
						}
						assert.Equal(t, before.Current, w.OldHash, "round %d: %s: diff's old hash is the one the render wrote", round, id)
						assert.Equal(t, after.Current, w.NewHash, "round %d: %s: diff's new hash is the one the render wrote", round, id)
						if before.Current != after.Current {
							hashChanged = append(hashChanged, id)
							assert.Equal(t, "rolls", w.Status, "round %d: %s: its hash changed", round, id)
							assert.NotEmpty(t, w.Configs, "round %d: %s: its hash changed: which config?", round, id)
						} else {
							assert.Empty(t, w.Configs, "round %d: %s: its hash did not change", round, id)
						}
						if w.Status == "rolls" && before.Current == after.Current {
							assert.True(t, image, "round %d: %s rolls, neither its hash nor its image changed: %v", round, id, w.Template)
						}
					}
					sort.Strings(hashChanged)
					byConfig += len(hashChanged)

					// The configs changed after the render.
					late := spliced(t, base, next)
					code, _, errOut := c.run(nil, "verify", c.file(late))
					lateExplain := c.explain(late)
					var staleFound []string
					for id, a := range lateExplain {
						if !a.OptedOut && a.Current != a.Hash {
							staleFound = append(staleFound, id)
						}
					}
					sort.Strings(staleFound)
					assert.Equal(t, hashChanged, staleFound, "round %d: explain: stale exactly where the hash changed", round)
					if len(hashChanged) == 0 {
						assert.Equal(t, 0, code, "round %d: verify: nothing stale: %s", round, errOut)
					} else {
						stale++
						assert.Equal(t, 1, code, "round %d: verify: stale hashes", round)
						for _, id := range hashChanged {
							assert.Contains(t, errOut, "  "+id+" (document ", "round %d: verify names the stale workload", round)
						}
						assert.Equal(t, len(hashChanged), strings.Count(errOut, "): want \"v1-"), "round %d: verify names only the stale workloads: %s", round, errOut)
					}
					againstNext := c.diff(late, next)
					var staleInLate, rolling []string
					for _, w := range againstNext.Workloads {
						id := w.Kind + " " + strings.TrimPrefix(w.Namespace+"/"+w.Name, "/")
						if len(w.StaleHashes) > 0 {
							staleInLate = append(staleInLate, id)
						}
						if w.Status == "rolls" {
							rolling = append(rolling, id)
						}
					}
					assert.Equal(t, hashChanged, staleInLate, "round %d: diff: the hashes that do not match their content", round)
					sort.Strings(imageOnly)
					assert.Equal(t, imageOnly, rolling, "round %d: the late render against the new one rolls the images only", round)
				}
				assert.Positive(t, byConfig, "the edits rolled nothing through config")
				assert.Positive(t, stale, "no round left a stale hash")
			})
		}
	}
}
