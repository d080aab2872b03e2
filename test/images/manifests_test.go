package images

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// controllerRepository is the image the install manifests and the chart pull.
const controllerRepository = "ghcr.io/confighash/confighash-controller"

// TestInstallImagesUseTheReleaseTag: the kustomize install and the Helm
// chart name the controller image by the release's version (the chart's
// appVersion), never by a moving tag such as :latest.
func TestInstallImagesUseTheReleaseTag(t *testing.T) {
	root := testtools.RepoRoot(t)
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	readYAML(t, filepath.Join(root, "charts/confighash-controller/Chart.yaml"), &chart)
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(chart.AppVersion) {
		t.Fatalf("Chart.yaml appVersion %q is not a release version (vX.Y.Z)", chart.AppVersion)
	}

	var values struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	readYAML(t, filepath.Join(root, "charts/confighash-controller/values.yaml"), &values)
	if values.Image.Repository != controllerRepository {
		t.Errorf("values.yaml image.repository = %q, want %q", values.Image.Repository, controllerRepository)
	}
	if values.Image.Tag != "" && values.Image.Tag != chart.AppVersion {
		t.Errorf("values.yaml image.tag = %q, want empty (the appVersion) or %q", values.Image.Tag, chart.AppVersion)
	}

	var deploy struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Image string `json:"image"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	readYAML(t, filepath.Join(root, "config/core/deployment.yaml"), &deploy)
	want := controllerRepository + ":" + chart.AppVersion
	if cs := deploy.Spec.Template.Spec.Containers; len(cs) != 1 || cs[0].Image != want {
		t.Errorf("config/core/deployment.yaml containers = %+v, want one with image %s", cs, want)
	}

	// No moving tag anywhere in the install paths.
	latest := regexp.MustCompile(`image:.*:latest\b|tag:\s*"?latest`)
	for _, dir := range []string{"config", "charts/confighash-controller"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if m := latest.Find(data); m != nil {
				t.Errorf("%s: %q: name the release's version instead", path, m)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
