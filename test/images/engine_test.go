package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// requireEnv makes a missing or unusable container engine a failure.
	requireEnv = "CONFIGHASH_REQUIRE_IMAGES"
	// engineEnv names the engine (a path or a command on PATH) instead of
	// the first of podman and docker that answers.
	engineEnv = "CONFIGHASH_CONTAINER_ENGINE"

	// testVersion is the version the test images are built with; the
	// binaries' default is "dev", so seeing it proves the build passed it.
	testVersion   = "v0.0.0-imagetest"
	functionRef   = "localhost/confighash:imagetest"
	controllerRef = "localhost/confighash-controller:imagetest"

	// buildTimeout bounds `make image` on a busy machine with a cold Go
	// build cache.
	buildTimeout = 15 * time.Minute
)

// images are the two images built for this test run.
type images struct {
	// engine is the podman or docker executable.
	engine string
	// podman is true when engine is podman: kustomize then needs a docker
	// shim on PATH.
	podman bool
	// binDir holds the static binaries the images were built from.
	binDir string
	// function and controller are the image references.
	function, controller string
}

// built builds the images once per test binary; every test shares the
// result (or the reason there are none).
var built = sync.OnceValues(buildImages)

// requireImages returns the built images, or skips the test with the reason
// there are none (fails it when requireEnv is set).
func requireImages(t *testing.T) *images {
	t.Helper()
	img, err := built()
	if err == nil {
		return img
	}
	if os.Getenv(requireEnv) != "" {
		t.Fatalf("%s is set, but the images cannot be built or run: %v", requireEnv, err)
	}
	t.Skipf("skipping: %v; set %s=1 to make this a failure", err, requireEnv)
	return nil
}

func buildImages() (*images, error) {
	engine, err := findEngine()
	if err != nil {
		return nil, err
	}
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	img := &images{
		engine:     engine,
		podman:     strings.Contains(filepath.Base(engine), "podman"),
		binDir:     filepath.Join(root, "bin", "image"),
		function:   functionRef,
		controller: controllerRef,
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-C", root, "image",
		"CONTAINER_ENGINE="+engine, "IMAGE_FROM=local", "VERSION="+testVersion,
		"FUNCTION_IMAGE="+img.function, "CONTROLLER_IMAGE="+img.controller)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s found, but `make image` failed (%w); on Debian, hack/podman.sh configures podman:\n%s", engine, err, tail(out))
	}
	// Can the engine run a container here (rootless podman without subuids
	// builds but cannot)?
	if _, stderr, err := img.run(ctx, nil, "run", "--rm", "--network", "none", img.function, "version"); err != nil {
		return nil, fmt.Errorf("%s built the images but cannot run them (%w): %s", engine, err, stderr)
	}
	return img, nil
}

// findEngine returns $CONFIGHASH_CONTAINER_ENGINE, or the first of podman
// and docker whose `info` succeeds (a docker client without a daemon does
// not count).
func findEngine() (string, error) {
	candidates := []string{"podman", "docker"}
	if e := os.Getenv(engineEnv); e != "" {
		candidates = []string{e}
	}
	var reasons []string
	for _, name := range candidates {
		path, err := exec.LookPath(name)
		if err != nil {
			reasons = append(reasons, name+": not found")
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, path, "info").CombinedOutput()
		cancel()
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("%s info: %v: %s", path, err, tail(out)))
			continue
		}
		return path, nil
	}
	return "", fmt.Errorf("no container engine (%s)", strings.Join(reasons, "; "))
}

// run runs the engine with args and stdin, returning stdout and stderr.
func (img *images) run(ctx context.Context, stdin []byte, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, img.engine, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// must runs the engine and fails the test when it fails.
func (img *images) must(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, stderr, err := img.run(ctx, nil, args...)
	if err != nil {
		t.Fatalf("%s %s: %v: %s", filepath.Base(img.engine), strings.Join(args, " "), err, stderr)
	}
	return out
}

// dockerPath returns a PATH on which `docker` is the engine: kustomize
// runs container functions with `docker run`.
func (img *images) dockerPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PATH")
	if !img.podman {
		return filepath.Dir(img.engine) + string(os.PathListSeparator) + path
	}
	dir := t.TempDir()
	shim := fmt.Sprintf("#!/bin/sh\n# docker -> podman\nexec %q \"$@\"\n", img.engine)
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + path
}

// repoRoot is the module root: testtools.RepoRoot without a testing.TB.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// tail is the end of a command's output, enough to see why it failed.
func tail(out []byte) string {
	const limit = 2000
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return string(out)
}

// TestImageVersionAndLabels checks what a user inspects first: the version
// the binaries print, the user they run as and the OCI labels.
func TestImageVersionAndLabels(t *testing.T) {
	img := requireImages(t)
	tests := []struct {
		ref, title string
	}{
		{img.function, "confighash"},
		{img.controller, "confighash-controller"},
	}
	for _, tt := range tests {
		t.Run(tt.title, func(t *testing.T) {
			if got := img.must(t, "image", "inspect", "--format", "{{.Config.User}}", tt.ref); strings.TrimSpace(got) != "65532:65532" {
				t.Errorf("user = %q, want 65532:65532", strings.TrimSpace(got))
			}
			for label, want := range map[string]string{
				"org.opencontainers.image.title":    tt.title,
				"org.opencontainers.image.version":  testVersion,
				"org.opencontainers.image.source":   "https://github.com/confighash/confighash",
				"org.opencontainers.image.licenses": "Apache-2.0",
			} {
				got := img.must(t, "image", "inspect", "--format", fmt.Sprintf("{{index .Config.Labels %q}}", label), tt.ref)
				if strings.TrimSpace(got) != want {
					t.Errorf("label %s = %q, want %q", label, strings.TrimSpace(got), want)
				}
			}
		})
	}
	// kustomize runs functions as nobody: the image must resolve that user.
	got := img.must(t, "run", "--rm", "--network", "none", "--user", "nobody", img.function, "version")
	if want := "confighash " + testVersion + "\n"; got != want {
		t.Errorf("confighash version in the image as nobody = %q, want %q", got, want)
	}
}
