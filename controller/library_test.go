package controller_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLibraryLeavesTheProcessAlone: the package is a library. None of its
// non-test files imports what reads or sets process-wide state: command-line
// flags, the environment and the pod's files (os), the global loggers of
// client-go (klog) and controller-runtime, its signal handler.
// internal/controllercmd does that wiring for confighash-controller.
func TestLibraryLeavesTheProcessAlone(t *testing.T) {
	denied := []string{
		"flag", "os", "k8s.io/klog", "sigs.k8s.io/controller-runtime/pkg/log",
		"sigs.k8s.io/controller-runtime/pkg/manager/signals",
		"github.com/confighash/confighash/internal/controllercmd",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range denied {
				if path == d || strings.HasPrefix(path, d+"/") {
					t.Errorf("%s imports %s: the controller package is a library; the program (internal/controllercmd) does that", name, path)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no non-test Go files found")
	}
}
