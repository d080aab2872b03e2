package inject

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/confighash/confighash/hashing"
)

// kcm renders a ConfigMap as kustomize sends it to a function: name,
// namespace and the build annotations given as key=value pairs.
func kcm(kind, name, namespace string, annotations ...string) string {
	s := "apiVersion: v1\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n"
	if namespace != "" {
		s += "  namespace: " + namespace + "\n"
	}
	if len(annotations) > 0 {
		s += "  annotations:\n"
		for _, a := range annotations {
			k, v, _ := strings.Cut(a, "=")
			s += "    internal.config.kubernetes.io/" + k + ": '" + v + "'\n"
		}
	}
	if kind == "Secret" {
		return s + "stringData:\n  k: v\n  other: w\n"
	}
	return s + "data:\n  k: v\n  other: w\n"
}

// kdeploy is a Deployment consuming the given env lines, with build
// annotations.
func kdeploy(namespace, refs string, annotations ...string) string {
	s := strings.Replace(kcm("Deployment", "web", namespace, annotations...), "apiVersion: v1", "apiVersion: apps/v1", 1)
	s = strings.TrimSuffix(s, "data:\n  k: v\n  other: w\n")
	return s + "spec:\n  template:\n    spec:\n      containers:\n      - name: c\n" + refs
}

const envFromCfg = "        envFrom:\n        - configMapRef: {name: cfg}\n"

// envFromTok reads the Secret tok whole; saTokenType makes a kcm Secret a
// service account token Secret, which the cluster fills in.
const (
	envFromTok  = "        envFrom:\n        - secretRef: {name: tok}\n"
	saTokenType = "type: kubernetes.io/service-account-token\n"
)

// markFilled adds key: "true" to metadata.<field> (annotations or labels)
// of doc, as OpenShift's CA bundle ConfigMaps are marked for the cluster to
// fill in.
func markFilled(doc, field, key string) string {
	line := "    " + key + ": \"true\"\n"
	if strings.Contains(doc, "  "+field+":\n") {
		return strings.Replace(doc, "  "+field+":\n", "  "+field+":\n"+line, 1)
	}
	return strings.Replace(doc, "metadata:\n", "metadata:\n  "+field+":\n"+line, 1)
}

// analyze runs Analyze on docs, one stream, and fails the test on an error.
func analyze(t *testing.T, opts Options, docs ...string) *Report {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(strings.Join(docs, "---\n")))
	require.NoError(t, err)
	r, err := Analyze(nodes, opts)
	require.NoError(t, err)
	return r
}

// TestKustomizeReferences follows kustomize's filters/nameref rules for a
// reference written before the kustomization's renames.
func TestKustomizeReferences(t *testing.T) {
	renamedCfg := []string{"previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=prod-"}
	cases := []struct {
		name string
		// namespace is Options.DefaultNamespace: the functionConfig's.
		namespace string
		docs      []string
		inStream  []string // Kind/name of the uses hashed
		external  string
		warning   string // a finding containing this
	}{
		{name: "no build annotations: the written name",
			docs:     []string{kcm("ConfigMap", "cfg", ""), kdeploy("", envFromCfg)},
			inStream: []string{"ConfigMap/cfg"}},
		{name: "namePrefix: the renamed object by its previous name",
			docs:     []string{kcm("ConfigMap", "prod-cfg", "", renamedCfg...), kdeploy("", envFromCfg, "prefixes=prod-")},
			inStream: []string{"ConfigMap/prod-cfg"}},
		{name: "chained renames: any previous name",
			docs: []string{kcm("ConfigMap", "prod-cfg-x", "ns", "previousNames=cfg,cfg,prod-cfg", "previousKinds=ConfigMap,ConfigMap,ConfigMap", "previousNamespaces=default,ns,ns"),
				kdeploy("ns", "        envFrom:\n        - configMapRef: {name: prod-cfg}\n")},
			inStream: []string{"ConfigMap/prod-cfg-x"}},
		{name: "generator: the hash suffix kustomize will add",
			docs:     []string{kcm("ConfigMap", "prod-cfg", "", append(renamedCfg, "needsHashSuffix=enabled")...), kdeploy("", envFromCfg)},
			inStream: []string{"ConfigMap/prod-cfg-"}},
		{name: "generator next to its prefixed variant: the unsuffixed one by its own name, as kustomize's hash suffix step records it",
			docs: []string{kcm("ConfigMap", "cfg", "", "needsHashSuffix=enabled"),
				kcm("ConfigMap", "canary-cfg", "", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=canary-", "needsHashSuffix=enabled"),
				kdeploy("", envFromCfg)},
			inStream: []string{"ConfigMap/cfg-"}},
		{name: "generator next to its prefixed variant: the variant's workload by its prefix",
			docs: []string{kcm("ConfigMap", "cfg", "", "needsHashSuffix=enabled"),
				kcm("ConfigMap", "canary-cfg", "", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=canary-", "needsHashSuffix=enabled"),
				kdeploy("", envFromCfg, "prefixes=canary-")},
			inStream: []string{"ConfigMap/canary-cfg-"}},
		{name: "namespace moved with the workload",
			docs:     []string{kcm("ConfigMap", "cfg", "shop", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=staging"), kdeploy("shop", envFromCfg)},
			inStream: []string{"ConfigMap/cfg"}},
		{name: "config written in default, workload without namespace: kustomize fixes the reference, the pod reads its own namespace (external)",
			docs:     []string{kcm("ConfigMap", "prod-cfg", "default", renamedCfg...), kdeploy("", envFromCfg)},
			external: "ConfigMap/prod-cfg"},
		{name: "external list in order of the final names: a reference kustomize fixes to a config of another namespace sorts by its new name (seed 22 of the random trees)",
			docs: []string{kcm("ConfigMap", "prod-cfg", "default", renamedCfg...),
				kdeploy("", "        envFrom:\n        - configMapRef: {name: cfg}\n        - configMapRef: {name: ghost}\n")},
			external: "ConfigMap/ghost,ConfigMap/prod-cfg"},
		{name: "config without namespace, workload written in default: kustomize fixes the reference, external",
			docs:     []string{kcm("ConfigMap", "prod-cfg", "", renamedCfg...), kdeploy("default", envFromCfg)},
			external: "ConfigMap/prod-cfg"},
		{name: "default namespace default: written in default and without namespace, one namespace", namespace: "default",
			docs:     []string{kcm("ConfigMap", "prod-cfg", "", renamedCfg...), kdeploy("default", envFromCfg)},
			inStream: []string{"ConfigMap/prod-cfg"}},
		{name: "renamed object in another namespace: not a candidate",
			docs:     []string{kcm("ConfigMap", "prod-cfg", "other", renamedCfg...), kdeploy("shop", envFromCfg)},
			external: "ConfigMap/cfg"},
		{name: "default namespace: a renamed config without namespace is no candidate for a workload of that namespace", namespace: "shop",
			docs:     []string{kcm("ConfigMap", "prod-cfg", "", renamedCfg...), kdeploy("shop", envFromCfg, "prefixes=prod-")},
			external: "ConfigMap/cfg"},
		{name: "default namespace: a workload without namespace keeps the old name of a renamed config of that namespace", namespace: "shop",
			docs:     []string{kcm("ConfigMap", "prod-cfg", "shop", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=shop", "prefixes=prod-"), kdeploy("", envFromCfg, "prefixes=prod-")},
			external: "ConfigMap/cfg"},
		{name: "default namespace: neither writes one, kustomize fixes the reference", namespace: "shop",
			docs:     []string{kcm("ConfigMap", "prod-cfg", "", renamedCfg...), kdeploy("", envFromCfg, "prefixes=prod-")},
			inStream: []string{"ConfigMap/prod-cfg"}},
		{name: "now another kind: kustomize renames the reference all the same, external by the new name",
			docs:     []string{kcm("Secret", "prod-cfg", "", renamedCfg...), kdeploy("", envFromCfg, "prefixes=prod-")},
			external: "ConfigMap/prod-cfg"},
		{name: "now another kind, referenced by its old and new name: one external use",
			docs: []string{kcm("Secret", "prod-cfg", "", renamedCfg...),
				kdeploy("", "        env:\n        - {name: A, valueFrom: {configMapKeyRef: {name: cfg, key: k}}}\n        - {name: B, valueFrom: {configMapKeyRef: {name: prod-cfg, key: other}}}\n        envFrom:\n        - configMapRef: {name: app}\n"),
				kcm("ConfigMap", "app", "")},
			inStream: []string{"ConfigMap/app"},
			external: "ConfigMap/prod-cfg"},
		{name: "another kind once had the name: not a candidate",
			docs:     []string{kcm("Secret", "prod-cfg", "", "previousNames=cfg", "previousKinds=Secret", "previousNamespaces=default"), kdeploy("", envFromCfg)},
			external: "ConfigMap/cfg"},
		{name: "two candidates: the one with the referrer's prefixes",
			docs: []string{kcm("ConfigMap", "a-cfg", "", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=a-"),
				kcm("ConfigMap", "b-cfg", "", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=b-"),
				kdeploy("", envFromCfg, "prefixes=a-")},
			inStream: []string{"ConfigMap/a-cfg"}},
		{name: "two candidates, referrer without prefixes: neither, the written name stays",
			docs: []string{kcm("ConfigMap", "a-cfg", "", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=a-"),
				kcm("ConfigMap", "b-cfg", "", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=b-"),
				kdeploy("", envFromCfg)},
			external: "ConfigMap/cfg"},
		{name: "two candidates, the written name stays and exists",
			docs: []string{kcm("ConfigMap", "a-cfg", "", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=a-"),
				kcm("ConfigMap", "b-cfg", "", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=b-"),
				kcm("ConfigMap", "cfg", ""), kdeploy("", envFromCfg)},
			inStream: []string{"ConfigMap/cfg"}},
		{name: "a generated config's unsuffixed name, two candidates, referrer without prefixes: the written name stays, external",
			docs: []string{kcm("ConfigMap", "p-cfg", "", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=p-", "needsHashSuffix=enabled"),
				kcm("ConfigMap", "q-p-cfg", "", "previousNames=cfg,p-cfg", "previousKinds=ConfigMap,ConfigMap", "previousNamespaces=default,default", "prefixes=p-,q-", "needsHashSuffix=enabled"),
				kdeploy("", "        envFrom:\n        - configMapRef: {name: p-cfg}\n")},
			external: "ConfigMap/p-cfg"},
		{name: "two candidates kustomize cannot choose between: a warning",
			docs: []string{kcm("ConfigMap", "p-one", "", "previousNames=cfg,one", "previousKinds=ConfigMap,ConfigMap", "previousNamespaces=default,default", "prefixes=p-"),
				kcm("ConfigMap", "p-two", "", "previousNames=cfg,two", "previousKinds=ConfigMap,ConfigMap", "previousNamespaces=default,default", "prefixes=p-"),
				kdeploy("", envFromCfg, "prefixes=p-")},
			external: "ConfigMap/cfg",
			warning:  "matches ConfigMap p-one and ConfigMap p-two, all once named cfg: kustomize will refuse it"},
		{name: "service account token Secret renamed by namePrefix: external by its final name",
			docs: []string{kcm("Secret", "prod-tok", "", "previousNames=tok", "previousKinds=Secret", "previousNamespaces=default", "prefixes=prod-") + saTokenType,
				kdeploy("", envFromTok, "prefixes=prod-")},
			external: "Secret/prod-tok",
			warning:  "consumes Secret prod-tok, which the cluster fills in"},
		{name: "service account token Secret and a ConfigMap under one prefix: the ConfigMap hashed, the Secret external",
			docs: []string{kcm("Secret", "prod-tok", "", "previousNames=tok", "previousKinds=Secret", "previousNamespaces=default", "prefixes=prod-") + saTokenType,
				kcm("ConfigMap", "prod-cfg", "", renamedCfg...),
				kdeploy("", envFromCfg+"        - secretRef: {name: tok}\n", "prefixes=prod-")},
			inStream: []string{"ConfigMap/prod-cfg"},
			external: "Secret/prod-tok"},
		{name: "service account token Secret under its written name: external",
			docs:     []string{kcm("Secret", "tok", "") + saTokenType, kdeploy("", envFromTok)},
			external: "Secret/tok",
			warning:  "consumes Secret tok, which the cluster fills in"},
		{name: "inject-cabundle ConfigMap under its written name: external",
			docs:     []string{markFilled(kcm("ConfigMap", "cfg", ""), "annotations", hashing.InjectCABundleAnnotation), kdeploy("", envFromCfg)},
			external: "ConfigMap/cfg",
			warning:  "consumes ConfigMap cfg, which the cluster fills in"},
		{name: "inject-cabundle ConfigMap renamed by namePrefix: external by its final name",
			docs: []string{markFilled(kcm("ConfigMap", "prod-cfg", "", renamedCfg...), "annotations", hashing.InjectCABundleAnnotation),
				kdeploy("", envFromCfg, "prefixes=prod-")},
			external: "ConfigMap/prod-cfg",
			warning:  "consumes ConfigMap prod-cfg, which the cluster fills in"},
		{name: "inject-trusted-cabundle ConfigMap renamed by namePrefix: external by its final name",
			docs: []string{markFilled(kcm("ConfigMap", "prod-cfg", "", renamedCfg...), "labels", hashing.InjectTrustedCABundleLabel),
				kdeploy("", envFromCfg, "prefixes=prod-")},
			external: "ConfigMap/prod-cfg"},
		{name: "inject-cabundle as a label: hashed",
			docs:     []string{markFilled(kcm("ConfigMap", "cfg", ""), "labels", hashing.InjectCABundleAnnotation), kdeploy("", envFromCfg)},
			inStream: []string{"ConfigMap/cfg"}},
		{name: "old and new name of one object: one use",
			docs: []string{kcm("ConfigMap", "prod-cfg", "", renamedCfg...),
				kdeploy("", "        env:\n        - {name: A, valueFrom: {configMapKeyRef: {name: cfg, key: k}}}\n        - {name: B, valueFrom: {configMapKeyRef: {name: prod-cfg, key: other}}}\n")},
			inStream: []string{"ConfigMap/prod-cfg"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := analyze(t, Options{DefaultNamespace: tc.namespace}, tc.docs...)
			require.Len(t, r.Workloads, 1)
			w := r.Workloads[0]
			var got []string
			for _, u := range w.InStream {
				got = append(got, u.Ref())
			}
			require.Len(t, got, len(tc.inStream), "in-stream uses %v", got)
			for i, want := range tc.inStream {
				assert.True(t, strings.HasPrefix(got[i], want), "%s, want %s", got[i], want)
			}
			assert.Equal(t, tc.external, w.ExternalValue())
			assert.Equal(t, len(tc.inStream) > 0, w.Hash != "")
			var messages []string
			for _, f := range r.Findings {
				messages = append(messages, f.Message)
			}
			if tc.warning != "" {
				assert.Contains(t, strings.Join(messages, "\n"), tc.warning)
			}
		})
	}
}

// TestKustomizeRenameHashesFinalNames: the hash of a workload whose
// reference kustomize will fix is the hash of the same objects written with
// their final names, keys merged across the old and the new name.
func TestKustomizeRenameHashesFinalNames(t *testing.T) {
	before := []string{kcm("ConfigMap", "prod-cfg", "", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default"),
		kdeploy("", "        env:\n        - {name: A, valueFrom: {configMapKeyRef: {name: cfg, key: k}}}\n        - {name: B, valueFrom: {configMapKeyRef: {name: prod-cfg, key: other}}}\n")}
	after := []string{kcm("ConfigMap", "prod-cfg", ""),
		kdeploy("", "        env:\n        - {name: A, valueFrom: {configMapKeyRef: {name: prod-cfg, key: k}}}\n        - {name: B, valueFrom: {configMapKeyRef: {name: prod-cfg, key: other}}}\n")}
	hash := func(docs []string) hashing.Use {
		r := analyze(t, Options{}, docs...)
		require.Len(t, r.Workloads, 1)
		require.Len(t, r.Workloads[0].InStream, 1)
		require.NotEmpty(t, r.Workloads[0].Hash)
		u := r.Workloads[0].InStream[0]
		u.Name += " " + r.Workloads[0].Hash
		return u
	}
	assert.Equal(t, hash(after), hash(before))
}

// TestKustomizeAnnotationsMismatch: previous names, kinds and namespaces
// that do not line up (kustomize itself would panic) are an error naming
// the object.
func TestKustomizeAnnotationsMismatch(t *testing.T) {
	nodes, err := kio.FromBytes([]byte(kcm("ConfigMap", "prod-cfg", "", "previousNames=cfg,x", "previousKinds=ConfigMap", "previousNamespaces=default")))
	require.NoError(t, err)
	_, err = Analyze(nodes, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ConfigMap prod-cfg (document 0)")
	assert.Contains(t, err.Error(), "previousNames")
}
