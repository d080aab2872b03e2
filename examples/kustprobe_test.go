package examples_test

import (
	"path/filepath"
	"testing"
)

// kprobeTrees are trees under testdata/kustomize/probe-*, inputs kustomize
// users write that the docs trees do not hold, each checked as
// TestKustomizeDocs checks its trees (checkDocsTree).
var kprobeTrees = []docsTree{
	{
		// A local-config ConfigMap, a local-config generator with the hash
		// suffix and one without, renamed by a prefix, a suffix and a
		// namespace: kustomize fixes the pod's references to them before
		// it drops them, so the pod reads configs of their final names
		// that the render does not hold.
		name: "local-config configs under namePrefix, nameSuffix and namespace: external by their final names", tree: "probe-local-config", build: "prod",
		workloads: map[string]string{
			"Deployment/shop/prod-web-eu": "ConfigMap/prod-flags-eu-9hd57fhg78,ConfigMap/prod-settings-eu,Secret/prod-token-eu",
		},
		changes: []treeChange{
			{file: "base/configmaps.yaml", old: "LOG_LEVEL: info", new: "LOG_LEVEL: debug", moved: []string{"Deployment/shop/prod-web-eu"}},
			// Outside the render: no hash moves (the controller reads them).
			{file: "base/configmaps.yaml", old: `replicas: "3"`, new: `replicas: "4"`},
			// A new suffix, so a new name in the external list.
			{file: "base/kustomization.yaml", old: "FAST=true", new: "FAST=false"},
		},
	},
	{
		name: "a local-config generator's hash suffix alone: external by its suffixed name", tree: "probe-local-config", build: "plain",
		workloads: map[string]string{
			"Deployment//web": "ConfigMap/flags-9hd57fhg78,ConfigMap/settings,Secret/token",
		},
		changes: []treeChange{
			{file: "base/configmaps.yaml", old: "LOG_LEVEL: info", new: "LOG_LEVEL: debug", moved: []string{"Deployment//web"}},
			{file: "base/kustomization.yaml", old: "token=abc", new: "token=def"},
		},
	},
	{
		// The base next to a variant in which flags is an ordinary
		// ConfigMap (both/kustomization.yaml says what each reader reads).
		name: "a base's local-config generator next to a variant's ordinary one: each reader its own", tree: "probe-local-config", build: "both",
		workloads: map[string]string{
			"Deployment//web":        "ConfigMap/canary-settings,ConfigMap/flags-9hd57fhg78,Secret/canary-token",
			"Deployment//canary-web": "ConfigMap/canary-settings,Secret/canary-token",
		},
		changes: []treeChange{
			{file: "base/kustomization.yaml", old: "FAST=true", new: "FAST=false", moved: []string{"Deployment//canary-web"}},
			{file: "base/configmaps.yaml", old: "LOG_LEVEL: info", new: "LOG_LEVEL: debug", moved: []string{"Deployment//web", "Deployment//canary-web"}},
		},
	},
}

// TestKustomizeProbes builds the kprobeTrees with the real kustomize.
func TestKustomizeProbes(t *testing.T) {
	t.Parallel()
	for _, tc := range kprobeTrees {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkDocsTree(t, filepath.Join("..", "testdata", "kustomize", tc.tree), tc)
		})
	}
}
