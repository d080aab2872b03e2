package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/confighash/confighash/examples/helm-sdk/helm3"
	"github.com/confighash/confighash/examples/helm-sdk/helm4"
	"github.com/confighash/confighash/postrenderer"
)

// sdks are the Helm SDKs the example renders with, by major version.
var sdks = []struct {
	major  int
	render func(w io.Writer, chart, name, namespace string, pr *postrenderer.PostRenderer) error
}{
	{3, func(w io.Writer, chart, name, ns string, pr *postrenderer.PostRenderer) error {
		return helm3.Render(w, chart, name, ns, pr)
	}},
	{4, func(w io.Writer, chart, name, ns string, pr *postrenderer.PostRenderer) error {
		return helm4.Render(w, chart, name, ns, pr)
	}},
}

// TestMatchesHelmTemplate renders each chart through each Helm SDK with the
// in-process post-renderer, and through the real helm of the same major
// version with bin/confighash as post-renderer (the executable for Helm 3,
// the plugin for Helm 4): the outputs must be the same bytes.
func TestMatchesHelmTemplate(t *testing.T) {
	cases := []struct {
		name  string
		chart func(testing.TB) string
		key   []byte // CONFIGHASH_HMAC_KEY for helm, HMACKey for the SDK
		want  string // in the output, so that two renders without confighash cannot pass
	}{
		{name: "examples/helm", chart: exampleChart, want: "confighash.dev/hash: v1-sha256:"},
		{name: "examples/helm keyed", chart: exampleChart, key: []byte("example-hmac-key-0123456789abcdef"),
			want: "confighash.dev/hash: v1-hmac-sha256:"},
		{name: "corpus promtail", chart: promtail, want: "confighash.dev/hash: v1-sha256:"},
	}
	for _, sdk := range sdks {
		t.Run(fmt.Sprintf("helm%d", sdk.major), func(t *testing.T) {
			h := newHelm(t, sdk.major)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					chart := tc.chart(t)
					res := h.template(t, chart, tc.key)
					if res.ExitCode != 0 {
						t.Fatalf("%s template %s: exit %d\n%s", h, chart, res.ExitCode, res.Stderr)
					}
					pr, err := postrenderer.New(postrenderer.Options{Namespace: namespace, HMACKey: tc.key, Warnings: io.Discard})
					if err != nil {
						t.Fatal(err)
					}
					var got bytes.Buffer
					if err := sdk.render(&got, chart, release, namespace, pr); err != nil {
						t.Fatalf("the Helm %d SDK: %v", sdk.major, err)
					}
					if !strings.Contains(got.String(), tc.want) {
						t.Errorf("no %q in the SDK's output: the post-renderer did not run\n%s", tc.want, got.String())
					}
					compare(t, got.String(), res.Stdout)
				})
			}
			t.Run("command line", func(t *testing.T) {
				chart := exampleChart(t)
				res := h.template(t, chart, nil)
				if res.ExitCode != 0 {
					t.Fatalf("%s template %s: exit %d\n%s", h, chart, res.ExitCode, res.Stderr)
				}
				var stdout, errb bytes.Buffer
				args := []string{"-helm", fmt.Sprint(sdk.major), "-namespace", namespace, release, chart}
				if err := run(args, &stdout, &errb); err != nil {
					t.Fatalf("helm-sdk %s: %v\n%s", strings.Join(args, " "), err, errb.String())
				}
				compare(t, stdout.String(), res.Stdout)
			})
		})
	}
}

// TestFailure: a release confighash refuses (a Secret whose data is not
// base64) fails in helm template and in the SDK, whose error carries
// confighash's message naming the document; the SDK writes nothing.
func TestFailure(t *testing.T) {
	const want = "data.token: not valid base64"
	chart := filepath.Join(t.TempDir(), "greeter")
	if err := os.CopyFS(chart, os.DirFS(exampleChart(t))); err != nil {
		t.Fatal(err)
	}
	bad := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-token\ndata:\n  token: not-base64!\n"
	if err := os.WriteFile(filepath.Join(chart, "templates", "bad-secret.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sdk := range sdks {
		t.Run(fmt.Sprintf("helm%d", sdk.major), func(t *testing.T) {
			h := newHelm(t, sdk.major)
			if res := h.template(t, chart, nil); res.ExitCode == 0 {
				t.Errorf("%s template succeeded:\n%s", h, res.Stdout)
			} else if !strings.Contains(res.Stderr, want) {
				t.Errorf("%s template's error does not say %q:\n%s", h, want, res.Stderr)
			}
			pr, err := postrenderer.New(postrenderer.Options{Namespace: namespace})
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			err = sdk.render(&got, chart, release, namespace, pr)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Secret shop/web-token") {
				t.Errorf("the Helm %d SDK's error does not name Secret shop/web-token and say %q: %v", sdk.major, want, err)
			}
			if got.Len() != 0 {
				t.Errorf("the Helm %d SDK wrote manifests on failure:\n%s", sdk.major, got.String())
			}
		})
	}
}

// TestArguments: the command line refuses what it cannot render.
func TestArguments(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{name: "no chart", args: []string{"web"}, want: "want RELEASE and CHART, got 1 arguments"},
		{name: "unknown Helm", args: []string{"-helm", "2", "web", "chart"}, want: "-helm 2: want 3 or 4"},
		{name: "unknown flag", args: []string{"-output", "json", "web", "chart"}, want: "flag provided but not defined: -output"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(tc.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error saying %q", tc.args, err, tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("run(%q) printed %q", tc.args, stdout.String())
			}
		})
	}
}
