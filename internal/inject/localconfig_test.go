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
