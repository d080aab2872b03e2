package fn

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/inject"
)

func TestSeverity(t *testing.T) {
	for in, want := range map[inject.Severity]framework.Severity{
		inject.SeverityError:   framework.Error,
		inject.SeverityWarning: framework.Warning,
		inject.SeverityInfo:    framework.Info,
	} {
		assert.Equal(t, string(want), string(severity(in)), "fn's severity is kyaml framework's word")
		assert.Equal(t, string(want), string(in), "the KRM result carries the finding's own word")
	}
}

// TestResultsAsFramework holds fn's own result types to kyaml's
// framework.Result, which the function used to write: the same YAML, the same
// string for people, the same error text and exit code.
func TestResultsAsFramework(t *testing.T) {
	ref := func(apiVersion, kind, namespace, name string) *yaml.ResourceIdentifier {
		return &yaml.ResourceIdentifier{
			TypeMeta: yaml.TypeMeta{APIVersion: apiVersion, Kind: kind},
			NameMeta: yaml.NameMeta{Name: name, Namespace: namespace},
		}
	}
	for _, tc := range []struct {
		name    string
		results Results
	}{
		{name: "none"},
		{name: "full", results: Results{{
			Message: "ConfigMap cm not found", Severity: Warning,
			ResourceRef: ref("apps/v1", "Deployment", "ns", "web"), File: &File{Path: "a/b.yaml", Index: 2},
		}}},
		{name: "index zero and no namespace", results: Results{{
			Message: "m", Severity: Info, ResourceRef: ref("v1", "Pod", "", "p"), File: &File{Path: "p.yaml"},
		}}},
		{name: "empty severity, ref and file", results: Results{{Message: "bare"}, {
			Message: "x", ResourceRef: ref("", "", "", ""), File: &File{},
		}}},
		{name: "error among others", results: Results{
			{Message: "w", Severity: Warning, ResourceRef: ref("", "Kind", "", "n")},
			{Message: "e: \"quoted\"\nsecond line", Severity: Error, ResourceRef: ref("g/v", "K", "ns", "")},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fw framework.Results
			for _, r := range tc.results {
				f := &framework.Result{Message: r.Message, Severity: framework.Severity(r.Severity), ResourceRef: r.ResourceRef}
				if r.File != nil {
					f.File = &framework.File{Path: r.File.Path, Index: r.File.Index}
				}
				fw = append(fw, f)
			}
			want, err := yaml.Marshal(fw)
			require.NoError(t, err)
			got, err := yaml.Marshal(tc.results)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
			for i, r := range tc.results {
				assert.Equal(t, fw[i].String(), r.String())
			}
			assert.Equal(t, fw.Error(), tc.results.Error())
			assert.Equal(t, fw.ExitCode(), tc.results.ExitCode())
		})
	}
}
