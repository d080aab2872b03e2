package inject

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// TestSkipLocalConfig: under SkipLocalConfig (the KRM function) an object
// kustomize drops from its output and kpt does not apply is no config, so a
// reference to its name is external, and no workload; without it (a Helm or
// kubectl stream, which applies it) it is an ordinary object.
func TestSkipLocalConfig(t *testing.T) {
	local := func(value string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  annotations:\n    config.kubernetes.io/local-config: " + value + "\ndata: {k: v}\n"
	}
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        envFrom: [{configMapRef: {name: cfg}}]\n"
	cases := []struct {
		name     string
		docs     []string
		skip     bool
		external string // the workload's external annotation; "" when it hashes cfg
		workload bool   // whether web is analysed at all
	}{
		{name: "local-config true, KRM: external", docs: []string{local(`"true"`), deploy}, skip: true, external: "ConfigMap/cfg", workload: true},
		{name: "local-config true, stream: in the stream", docs: []string{local(`"true"`), deploy}, workload: true},
		{name: "local-config false, KRM: in the stream", docs: []string{local(`"false"`), deploy}, skip: true, workload: true},
		// kustomize drops the object for any value but "false".
		{name: "local-config yes, KRM: external", docs: []string{local(`"yes"`), deploy}, skip: true, external: "ConfigMap/cfg", workload: true},
		{name: "in a v1 List, KRM: external",
			docs: []string{testtools.List(local(`"true"`)), deploy},
			skip: true, external: "ConfigMap/cfg", workload: true},
		{name: "a local-config workload, KRM: not analysed",
			docs: []string{local(`"false"`), strings.Replace(deploy, "  name: web\n", "  name: web\n  annotations: {config.kubernetes.io/local-config: \"true\"}\n", 1)},
			skip: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := analyze(t, Options{SkipLocalConfig: tc.skip}, tc.docs...)
			if !tc.workload {
				assert.Empty(t, r.Workloads)
				return
			}
			require.Len(t, r.Workloads, 1)
			w := r.Workloads[0]
			assert.Equal(t, tc.external, w.ExternalValue())
			if tc.external == "" {
				assert.NotEmpty(t, w.Hash)
			} else {
				assert.Empty(t, w.Hash)
			}
		})
	}
}

// TestLocalConfigRenamedByKustomize: kustomize adds hash suffixes and fixes
// the references to renamed objects before it drops local-config objects,
// so a pod that reads one reads, in the cluster, a config of its final
// name: the external list names that one, and says why it is not hashed. A
// config the render holds under the same name is the one hashed.
func TestLocalConfigRenamedByKustomize(t *testing.T) {
	const mark = "    config.kubernetes.io/local-config: \"true\"\n"
	local := func(doc string) string {
		if !strings.Contains(doc, "  annotations:\n") {
			return strings.Replace(doc, "metadata:\n", "metadata:\n  annotations:\n"+mark, 1)
		}
		return strings.Replace(doc, "  annotations:\n", "  annotations:\n"+mark, 1)
	}
	renamed := []string{"previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=prod-"}
	cases := []struct {
		name     string
		docs     []string
		external string // the workload's external annotation (prefix of it, for a suffixed name)
		hashed   bool
	}{
		{name: "namePrefix: the prefixed name",
			docs:     []string{local(kcm("ConfigMap", "prod-cfg", "", renamed...)), kdeploy("", envFromCfg, "prefixes=prod-")},
			external: "ConfigMap/prod-cfg"},
		{name: "generator with the hash suffix: the suffixed name",
			docs:     []string{local(kcm("ConfigMap", "cfg", "", "needsHashSuffix=enabled")), kdeploy("", envFromCfg)},
			external: "ConfigMap/cfg-"},
		{name: "generator under a prefix, with the hash suffix",
			docs:     []string{local(kcm("ConfigMap", "prod-cfg", "", append(renamed, "needsHashSuffix=enabled")...)), kdeploy("", envFromCfg, "prefixes=prod-")},
			external: "ConfigMap/prod-cfg-"},
		{name: "moved into the workload's namespace",
			docs:     []string{local(kcm("Secret", "tok", "shop", "previousNames=tok", "previousKinds=Secret", "previousNamespaces=default")), kdeploy("shop", envFromTok)},
			external: "Secret/tok"},
		{name: "a variant's config and the base's local one: each reader its own",
			docs: []string{local(kcm("ConfigMap", "cfg", "", "needsHashSuffix=enabled")),
				kcm("ConfigMap", "canary-cfg", "", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=canary-"),
				kdeploy("", envFromCfg, "prefixes=canary-")},
			hashed: true},
		{name: "data a cluster would refuse (a number): no error, never read",
			docs:     []string{local(strings.Replace(kcm("ConfigMap", "cfg", "", "needsHashSuffix=enabled"), "k: v", "k: 3", 1)), kdeploy("", envFromCfg)},
			external: "ConfigMap/cfg-"},
		{name: "a local-config object before an ordinary one of the same identity: the ordinary one hashed, no error",
			docs:   []string{local(kcm("ConfigMap", "cfg", "")), kcm("ConfigMap", "cfg", ""), kdeploy("", envFromCfg)},
			hashed: true},
		{name: "a variant's config and the base's local one: the base's reader the local one",
			docs: []string{local(kcm("ConfigMap", "cfg", "", "needsHashSuffix=enabled")),
				kcm("ConfigMap", "canary-cfg", "", "previousNames=cfg", "previousKinds=ConfigMap", "previousNamespaces=default", "prefixes=canary-"),
				kdeploy("", envFromCfg)},
			external: "ConfigMap/cfg-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := analyze(t, Options{SkipLocalConfig: true}, tc.docs...)
			configs := 0
			for _, d := range tc.docs {
				if !strings.Contains(d, "kind: Deployment") && !strings.Contains(d, mark) {
					configs++
				}
			}
			assert.Equal(t, configs, r.Configs, "the configs counted (explain's count) are those the render holds")
			require.Len(t, r.Workloads, 1)
			w := r.Workloads[0]
			assert.Equal(t, tc.hashed, w.Hash != "")
			if tc.external == "" {
				assert.Empty(t, w.ExternalValue())
				return
			}
			assert.True(t, strings.HasPrefix(w.ExternalValue(), tc.external), "external %q, want %q", w.ExternalValue(), tc.external)
			if strings.HasSuffix(tc.external, "-") {
				assert.Len(t, w.ExternalValue(), len(tc.external)+10, "kustomize's suffix: %q", w.ExternalValue())
			}
			require.Len(t, r.Findings, 1)
			assert.Contains(t, r.Findings[0].Message, "config.kubernetes.io/local-config")
		})
	}
}
