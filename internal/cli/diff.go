package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/confighash/confighash/internal/annotations"
	"github.com/confighash/confighash/internal/hmackey"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/rolldiff"
)

const diffUsage = `confighash diff compares two renders and tells which workloads roll, and why.

Usage:
  confighash diff [flags] OLD NEW

OLD and NEW are files holding a plain YAML stream or a KRM ResourceList
(helm template, kustomize build, with or without confighash's annotations);
"-" reads one of them from standard input. The summary comes first, then a
table of the workloads that roll, are new or removed. Names only: values of
ConfigMaps and Secrets are never shown.

Exit status: 0, or with --exit-code 1 when a workload rolls, is new or is
removed; 2 on an error when --exit-code is given (1 without it).

Flags:
`

// diffExitChanged and diffExitError are the exit codes of diff --exit-code.
const (
	diffExitChanged = 1
	diffExitError   = 2
)

// errChanged tells Run that diff --exit-code found changes; it prints
// nothing.
var errChanged = errors.New("workloads roll")

func runDiff(args []string, stdio IO) int {
	err := diff(args, stdio)
	switch {
	case errors.Is(err, errChanged):
		return diffExitChanged
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		code := exit(err, stdio)
		var ec exitCodeError
		if errors.As(err, &ec) {
			code = diffExitError
		}
		return code
	}
	return 0
}

// exitCodeError marks an error of a diff run with --exit-code, which exits 2
// so that a pipeline tells an error from changes.
type exitCodeError struct{ error }

func (e exitCodeError) Unwrap() error { return e.error }

func diff(args []string, stdio IO) error {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	var o inject.Options
	var keyFile string
	fs.StringVar(&o.Prefix, "prefix", inject.DefaultPrefix, "annotation prefix")
	fs.StringVar(&o.DefaultNamespace, "namespace", "", "namespace of objects that name none (Helm's release namespace)")
	fs.Var(workloadFlag{&o.Workloads}, "workload", "pod template of another kind, as Kind.group=path (repeatable)")
	fs.StringVar(&keyFile, "hmac-key-file", "", "file holding the HMAC key the renders are hashed with (also $CONFIGHASH_HMAC_KEY_FILE, $CONFIGHASH_HMAC_KEY)")
	asJSON := fs.Bool("json", false, "print JSON (schema in docs/diff.md)")
	markdown := fs.Bool("markdown", false, "print Markdown, for a pull-request comment")
	exitCode := fs.Bool("exit-code", false, "exit 1 when a workload rolls, is new or is removed (errors exit 2)")
	wrap := func(err error) error {
		if err != nil && *exitCode {
			return exitCodeError{err}
		}
		return err
	}
	files, err := parseInterspersed(fs, args, diffUsage, stdio)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) && exitCodeAsked(args) {
			// Parsing stopped at the bad flag, maybe before --exit-code:
			// a pipeline must not read this error as "workloads roll".
			return exitCodeError{err}
		}
		return wrap(err)
	}
	if len(files) != 2 {
		return wrap(fmt.Errorf("diff takes two renders, OLD and NEW (found %s; see --help)", count(len(files), "argument")))
	}
	if files[0] == "-" && files[1] == "-" {
		return wrap(errors.New("only one of OLD and NEW can be standard input"))
	}
	if *asJSON && *markdown {
		return wrap(errors.New("--json and --markdown exclude each other"))
	}
	if o.Key, err = hmackey.Load(keyFile, stdio.Getenv); err != nil {
		return wrap(err)
	}
	if err := o.Validate(); err != nil {
		return wrap(err)
	}
	var renders [2]*rolldiff.Render
	var unchecked []string
	for i, name := range files {
		input, err := readInput("diff", name, stdio.In)
		if err != nil {
			return wrap(err)
		}
		if renders[i], err = rolldiff.Read(name, input, o); err != nil {
			return wrap(err)
		}
		found, err := uncheckedHashes(input, annotations.Key(o.Prefix, annotations.Hash), renders[i].Report())
		if err != nil {
			return wrap(fmt.Errorf("%s: reading the render: %w", name, err))
		}
		for _, u := range found {
			unchecked = append(unchecked, "  "+name+": "+u)
		}
	}
	if len(unchecked) > 0 {
		// Such a workload rolls when its config changes, and diff would
		// leave it out of its answer: say so rather than "0 of N roll".
		return wrap(fmt.Errorf("%d hashes on a kind diff does not read: pass the functionConfig's workloads as --workload Kind.group=path:\n%s",
			len(unchecked), strings.Join(unchecked, "\n")))
	}
	if renders[0].Report().Documents > 0 && renders[1].Report().Documents == 0 {
		// What a failed render leaves a pipeline; the diff below says
		// every workload is removed, which is true only on purpose.
		fmt.Fprintf(stdio.Err, "confighash: warning: %s holds no objects, so every workload of %s reads as removed: did the render fail? (in a shell pipeline, set -o pipefail)\n", inputName(files[1]), inputName(files[0]))
	}
	res := rolldiff.Compare(renders[0], renders[1])
	switch {
	case *asJSON:
		enc := json.NewEncoder(stdio.Out)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	case *markdown:
		err = rolldiff.WriteMarkdown(stdio.Out, res)
	default:
		err = rolldiff.WriteText(stdio.Out, res)
	}
	if err != nil {
		return wrap(fmt.Errorf("writing the diff: %w", err))
	}
	if *exitCode && res.Changed() {
		return errChanged
	}
	return nil
}

// parseInterspersed parses flags written before, between or after the
// positional arguments, and returns those.
func parseInterspersed(fs *flag.FlagSet, args []string, usage string, stdio IO) ([]string, error) {
	var positional []string
	for {
		if err := parseFlags(fs, args, usage, stdio); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// exitCodeAsked reports whether args, which failed to parse, set
// --exit-code anywhere before "--".
func exitCodeAsked(args []string) bool {
	asked := false
	for _, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "exit-code" {
			continue
		}
		asked = true
		if hasValue {
			asked, _ = strconv.ParseBool(value)
		}
	}
	return asked
}

// readInput reads a file, or standard input for "-", for command, which
// names it when the file is a directory.
func readInput(command, name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		b, err := readAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
		return b, nil
	}
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory: %s reads a render (the output of kustomize build %s, or of helm template), from a file or standard input", name, command, name)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return b, nil
}
