package inject

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseWorkload(t *testing.T) {
	tests := []struct {
		in   string
		want WorkloadKind
		err  string
	}{
		{"CloneSet.apps.kruise.io=spec/template", WorkloadKind{Group: "apps.kruise.io", Kind: "CloneSet", Path: "spec/template"}, ""},
		{"PodTemplate=template", WorkloadKind{Kind: "PodTemplate", Path: "template"}, ""},
		{"CloneSet.apps.kruise.io", WorkloadKind{}, "want Kind.group=path"},
		// A wrong path is refused where it is written (the flag, the
		// functionConfig's entry), not later as a list index.
		{"CloneSet.apps.kruise.io=/spec", WorkloadKind{}, `"CloneSet.apps.kruise.io=/spec": path "/spec" for kind CloneSet: use field names separated by single slashes`},
		{"CloneSet.apps.kruise.io=", WorkloadKind{}, `"CloneSet.apps.kruise.io=": path is required for kind CloneSet`},
		{".apps=spec/template", WorkloadKind{}, `".apps=spec/template": kind is required`},
	}
	for _, tt := range tests {
		got, err := ParseWorkload(tt.in)
		if tt.err != "" {
			require.ErrorContains(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

// TestWorkloadKindNearMiss: a configured workload kind whose API group is
// not the object's (Runner=… names the core group) hashes nothing; the
// object gets a warning that names the group to write, never silence. An
// object the kind matches gets its hash and no such warning.
func TestWorkloadKindNearMiss(t *testing.T) {
	const docs = `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {A: "1"}
---
apiVersion: example.com/v1
kind: Runner
metadata: {name: r}
spec:
  template:
    spec:
      containers: [{name: c, envFrom: [{configMapRef: {name: cfg}}]}]
`
	tests := []struct {
		workload string
		hashed   bool
		warning  string
	}{
		{"Runner=spec/template", false, `configured in the API group "" and this object is in "example.com"; give the kind its group to hash it (--workload Runner.example.com=spec/template)`},
		{"Runner.other.io=spec/template", false, `configured in the API group "other.io"`},
		{"Runner.example.com=spec/template", true, ""},
		{"Walker.example.com=spec/template", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.workload, func(t *testing.T) {
			kind, err := ParseWorkload(tt.workload)
			require.NoError(t, err)
			opts := Options{Workloads: []WorkloadKind{kind}}
			assert.Equal(t, kind.Kind == "Runner", opts.Relevant("example.com/v1", "Runner"), "a configured kind is read in every group")
			r := analyze(t, opts, docs)
			assert.Equal(t, tt.hashed, len(r.Workloads) == 1, "hashed")
			var warnings []string
			for _, f := range r.Findings {
				warnings = append(warnings, f.Message)
			}
			if tt.warning == "" {
				assert.Empty(t, warnings)
				return
			}
			require.Len(t, warnings, 1)
			assert.Contains(t, warnings[0], tt.warning)
		})
	}
}
