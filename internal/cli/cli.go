package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/confighash/confighash/fn"
	"github.com/confighash/confighash/internal/hmackey"
	"github.com/confighash/confighash/internal/inject"
)

// Version is set at build time with -ldflags -X.
var Version = "dev"

// IO bundles the streams a command uses, so tests can run it in-process.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	// Getenv reads the environment; os.Getenv when nil.
	Getenv func(string) string
}

const usage = `confighash rolls workloads when the ConfigMaps and Secrets they consume change.

Usage:
  confighash [flags] < input                 hash a KRM ResourceList or a plain YAML stream
  confighash explain [flags] [--json] [FILE] show what each workload consumes and its hash
  confighash verify [flags] [FILE]           exit 1 when a workload lacks its current hash or external list, or the input is empty (CI guard)
  confighash diff [flags] OLD NEW            which workloads two renders roll, and why (docs/diff.md)
  confighash status [flags]                  what the cluster runs against its configs (kubectl confighash, docs/status.md)
  confighash version                         print the version

On standard input, a ResourceList (kind: ResourceList) runs the KRM function
(kustomize, kpt); anything else is read as a multi-document YAML stream and
written back with hashes (helm --post-renderer, pipelines). explain and verify
read FILE, or standard input when FILE is "-" or absent, and take the flags
the render used. Exit status: 0, 1 on an error (verify: or a hash or external
list missing or stale); --help prints this on standard output.

Flags:
`

// Run executes confighash with args (without the program name) and returns
// the process exit code.
func Run(args []string, stdio IO) int {
	if stdio.Getenv == nil {
		stdio.Getenv = os.Getenv
	}
	if len(args) > 0 {
		switch args[0] {
		case "version":
			if len(args) == 2 && isHelpFlag(args[1]) {
				args = []string{"--help"} // every command's --help is the help
				break
			}
			if len(args) > 1 {
				return exit(fmt.Errorf("unexpected argument %q (see --help)", args[1]), stdio)
			}
			fmt.Fprintln(stdio.Out, "confighash", Version)
			return 0
		case "help":
			args = []string{"--help"}
		case "explain":
			return exit(runExplain(args[1:], stdio), stdio)
		case "verify":
			return exit(runVerify(args[1:], stdio), stdio)
		case "diff":
			return runDiff(args[1:], stdio)
		case "status":
			return runStatus(args[1:], stdio)
		}
	}
	o, _, err := parseFlagSet(flag.NewFlagSet("confighash", flag.ContinueOnError), args, 0, stdio)
	if err == nil {
		err = run(o, stdio)
	}
	return exit(err, stdio)
}

// isHelpFlag reports whether arg asks for help as the flag package reads it.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

func exit(err error, stdio IO) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stdio.Err, "confighash: error: %s\n", err)
		return 1
	}
	return 0
}

type options struct {
	inject.Options
	quiet bool
}

type workloadFlag struct{ list *[]inject.WorkloadKind }

func (w workloadFlag) String() string { return "" }

func (w workloadFlag) Set(s string) error {
	k, err := inject.ParseWorkload(s)
	if err != nil {
		return err
	}
	*w.list = append(*w.list, k)
	return nil
}

// parseFlagSet parses the render flags, written before or after up to
// maxArgs arguments, and returns those.
func parseFlagSet(fs *flag.FlagSet, args []string, maxArgs int, stdio IO) (options, []string, error) {
	var o options
	var keyFile string
	fs.StringVar(&o.Prefix, "prefix", inject.DefaultPrefix, "annotation prefix")
	fs.StringVar(&o.DefaultNamespace, "namespace", "", "namespace of objects that name none (Helm's release namespace)")
	fs.Var(workloadFlag{&o.Workloads}, "workload", "pod template of another kind, as Kind.group=path (repeatable), e.g. CloneSet.apps.kruise.io=spec/template")
	fs.StringVar(&keyFile, "hmac-key-file", "", "file holding an HMAC key: hash with HMAC-SHA256 (also $CONFIGHASH_HMAC_KEY_FILE, or the key itself in $CONFIGHASH_HMAC_KEY)")
	fs.BoolVar(&o.quiet, "quiet", false, "do not print warnings to standard error")
	positional, err := parseInterspersed(fs, args, usage, stdio)
	if err != nil {
		return o, nil, err
	}
	switch {
	case len(positional) > maxArgs && maxArgs == 0:
		// A file to hash, or a command misspelt.
		return o, nil, fmt.Errorf("unexpected argument %q: confighash reads the stream to hash from standard input (confighash [flags] < FILE), and its commands are explain, verify, diff, status and version (see --help)", positional[0])
	case len(positional) > maxArgs:
		return o, nil, fmt.Errorf("unexpected argument %q (see --help)", positional[maxArgs])
	}
	key, err := hmackey.Load(keyFile, stdio.Getenv)
	if err != nil {
		return o, nil, err
	}
	o.Key = key
	return o, positional, o.Validate()
}

// parseFlags parses args with fs. Help asked for (-h, --help) is printed
// on standard output: it is what the user asked for. A flag error is
// printed on standard error with the usage after it.
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdio IO) error {
	fs.SetOutput(stdio.Err)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if err == nil {
		return nil
	}
	w := stdio.Err
	if errors.Is(err, flag.ErrHelp) {
		w = stdio.Out
	}
	fmt.Fprint(w, usage)
	fs.SetOutput(w)
	fs.PrintDefaults()
	return err
}

func run(o options, stdio IO) error {
	input, err := readAll(stdio.In)
	if err != nil {
		return fmt.Errorf("reading standard input: %w", err)
	}
	if isResourceList(input) {
		results, err := fn.RunBytes(fn.Processor{Base: o.Options}, input, stdio.Out)
		if !o.quiet {
			for _, r := range results {
				if r.Severity != fn.Info {
					fmt.Fprintf(stdio.Err, "confighash: %s\n", r)
				}
			}
		}
		return err
	}
	return runStream(o, input, stdio)
}

// isResourceList reports whether the first document of input is a KRM
// ResourceList, in YAML or JSON.
func isResourceList(input []byte) bool {
	first := firstDocument(input)
	trimmed := bytes.TrimSpace(first)
	if bytes.HasPrefix(trimmed, []byte("{")) {
		var head struct {
			Kind string `json:"kind"`
		}
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		return dec.Decode(&head) == nil && head.Kind == "ResourceList"
	}
	for _, line := range strings.Split(string(first), "\n") {
		if rest, ok := strings.CutPrefix(line, "kind:"); ok {
			v := strings.Trim(strings.TrimSpace(stripComment(rest)), `"'`)
			return v == "ResourceList"
		}
	}
	return false
}

// firstDocument returns the input up to its second document separator.
func firstDocument(input []byte) []byte {
	rest := input
	for started := false; ; {
		line, after, found := bytes.Cut(rest, []byte("\n"))
		isSep := bytes.Equal(bytes.TrimRight(line, " \r"), []byte("---")) || bytes.HasPrefix(line, []byte("--- "))
		if isSep && started {
			return input[:len(input)-len(rest)]
		}
		if !isSep && len(bytes.TrimSpace(line)) > 0 && !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			started = true
		}
		if !found {
			return input
		}
		rest = after
	}
}

func stripComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		return s[:i]
	}
	return s
}
