package argocd_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// TestGenerateReleaseName checks the Helm release name the plugin renders a
// chart with. Argo CD's build environment names an Application outside its
// own namespace (apps in any namespace) "<namespace>_<name>" in
// ARGOCD_APP_NAME; Argo CD's built-in Helm takes the part after the "_" as
// the release name, as a release name may hold no "_". The plugin must do
// the same, or such an Application fails to render at all; and, as
// spec.source.helm.releaseName does for the built-in Helm,
// spec.source.plugin.env HELM_RELEASE_NAME (ARGOCD_ENV_HELM_RELEASE_NAME)
// names the release instead. Helm 3 and Helm 4.
func TestGenerateReleaseName(t *testing.T) {
	chart := filepath.Join(testtools.RepoRoot(t), "examples", "helm")
	cases := []struct {
		name string
		env  []string
		// want is the Deployment the chart renders for the release name,
		// which is in its name; empty: the command must fail.
		want, wantErr string
	}{
		{name: "app in the Argo CD namespace", env: []string{"ARGOCD_APP_NAME=web"}, want: "Deployment/web-greeter"},
		{name: "app in any namespace", env: []string{"ARGOCD_APP_NAME=team-a_web"}, want: "Deployment/web-greeter"},
		{name: "app in a namespace with dots", env: []string{"ARGOCD_APP_NAME=team.a_web"}, want: "Deployment/web-greeter"},
		{name: "HELM_RELEASE_NAME", env: []string{"ARGOCD_APP_NAME=team-a_web", "ARGOCD_ENV_HELM_RELEASE_NAME=shop"},
			want: "Deployment/shop-greeter"},
		{name: "HELM_RELEASE_NAME empty", env: []string{"ARGOCD_APP_NAME=team-a_web", "ARGOCD_ENV_HELM_RELEASE_NAME="},
			want: "Deployment/web-greeter"},
		{name: "HELM_RELEASE_NAME invalid", env: []string{"ARGOCD_APP_NAME=web", "ARGOCD_ENV_HELM_RELEASE_NAME=Shop_1"},
			wantErr: "Shop_1"},
	}
	for _, helm := range []string{"3", "4"} {
		a := newArgo(t, helm)
		for _, tc := range cases {
			t.Run("helm "+helm+"/"+tc.name, func(t *testing.T) {
				out, stderr, err := a.generate(t, chart, "apps/web", "shop", tc.env...)
				if tc.wantErr != "" {
					if err == nil || strings.TrimSpace(out) != "" || !strings.Contains(stderr, tc.wantErr) {
						t.Errorf("want a failure naming %q and no manifests: err %v, stderr %s, %d bytes of output", tc.wantErr, err, stderr, len(out))
					}
					return
				}
				if err != nil {
					t.Fatalf("generate: %v\n%s", err, stderr)
				}
				got := podHashes(t, out)
				if !strings.HasPrefix(got[tc.want], "v1-") {
					t.Errorf("%s: hash %q, want one; workloads: %v", tc.want, got[tc.want], got)
				}
			})
		}
	}
}
