// Package testtools finds the real tools the tests run (bin/confighash,
// kustomize, helm v3 and v4) and the shared corpus. A missing tool skips the
// test with a message on a developer's machine and fails it in CI, where
// CONFIGHASH_REQUIRE_TOOLS is set.
package testtools

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// mainModule starts the go.mod of the checkout's main module.
const mainModule = "module github.com/confighash/confighash\n"

// RepoRoot returns the checkout: the nearest folder at or above the working
// directory whose go.mod is the main module's, so that a module of its own
// below it (examples/helm-sdk) finds it too.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte(mainModule)) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of github.com/confighash/confighash at or above the working directory")
		}
		dir = parent
	}
}

// BinDir is $CONFIGHASH_BIN, or the repository's bin/.
func BinDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("CONFIGHASH_BIN"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(t), "bin")
}

// Tool returns the path of bin/<name>, or skips (fails in CI) when absent.
// `make build tools` installs them.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(BinDir(t), name)
	if _, err := os.Stat(p); err != nil {
		missing(t, "bin/"+name+" is not installed: run `make build tools`")
	}
	return p
}

// OnPath returns the path of the program name on the PATH (bash, for
// scripts a test runs as their projects do), or skips, or fails when
// CONFIGHASH_REQUIRE_TOOLS is set, as Tool does.
func OnPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, name+" is not on the PATH")
	}
	return p
}

// Corpus returns $CONFIGHASH_CORPUS (../shared/corpus), or skips when unset;
// .ci/run sets it, and fails when the folder is missing.
func Corpus(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("CONFIGHASH_CORPUS")
	if dir == "" {
		missing(t, "CONFIGHASH_CORPUS is not set: point it at ../shared/corpus to run the corpus tests")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("CONFIGHASH_CORPUS=%s: %v", dir, err)
	}
	return dir
}

func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CONFIGHASH_REQUIRE_TOOLS") != "" {
		t.Fatal(msg + " (CONFIGHASH_REQUIRE_TOOLS is set)")
	}
	t.Skip(msg)
}

// Result is what a command printed and how it exited.
type Result struct {
	Stdout, Stderr string
	ExitCode       int
}

// Run runs a command with stdin and returns its output; it fails the test
// only when the command cannot start.
func Run(t testing.TB, dir string, env []string, stdin []byte, name string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := Result{Stdout: out.String(), Stderr: errb.String()}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		res.ExitCode = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// CorpusFile is one manifest file of the corpus.
type CorpusFile struct {
	// Name is the file's base name, like install.yaml.
	Name string
	Data []byte
}

// CorpusFiles reads the *.yaml files of one folder of the corpus (argo-cd,
// kube-prometheus) in name order; none is a failure.
func CorpusFiles(t testing.TB, folder string) []CorpusFile {
	t.Helper()
	files, err := ReadCorpusFolder(Corpus(t), folder)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// ReadCorpusFolder reads the *.yaml files of folder in the corpus at dir in
// name order; none is an error. CorpusFiles is it for a test; make bench
// (hack/bench) reads the corpus through it too.
func ReadCorpusFolder(dir, folder string) ([]CorpusFile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, folder, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("corpus folder %s: %w", folder, err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no manifests in the corpus folder %s", folder)
	}
	out := make([]CorpusFile, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, CorpusFile{Name: filepath.Base(p), Data: b})
	}
	return out, nil
}

// Stream joins files into one stream, each after a "---" line and ending in
// a newline, the way one install applies them.
func Stream(files []CorpusFile) []byte {
	var b bytes.Buffer
	for _, f := range files {
		b.WriteString("---\n")
		b.Write(f.Data)
		if len(f.Data) > 0 && f.Data[len(f.Data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// AddSeedFiles adds the content of each file matching pattern (like
// testdata/*/input.yaml) to the fuzzer's seed corpus.
func AddSeedFiles(f *testing.F, pattern string) {
	f.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}
