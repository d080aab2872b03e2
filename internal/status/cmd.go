package status

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/confighash/confighash/internal/annotations"
	"github.com/confighash/confighash/internal/hmackey"
	"github.com/confighash/confighash/internal/yamlnode"
)

const usage = `kubectl confighash status shows whether the workloads confighash manages run
the configuration they should.

Usage:
  kubectl confighash status [-n NAMESPACE | -A] [--json | -o json]
  confighash status ...                 (the same; runs this plugin)

For each managed workload: the configs it consumes, the render-time and
controller hashes, whether its pod template is current for the live
ConfigMaps and Secrets (what the controller would decide now), the rollout's
progress, how many pods run an older template, and the last ConfigChanged
Event.

Exit status: 0 for a complete report (STALE and BLOCKED are findings); 1 on
an error, or when a read was refused or a render-time hash needs another
HMAC key (the report is printed, what is missing named on standard error).

Flags:
`

// Main runs the plugin with args (without the program name) and returns the
// exit code: 0, 1 on an error.
func Main(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	switch {
	case len(args) == 0 || strings.HasPrefix(args[0], "-"):
	case args[0] == "status":
		args = args[1:]
	case args[0] == "help":
		args = []string{"--help"}
	default:
		fmt.Fprintf(stderr, "kubectl-confighash: unknown command %q (try: status)\n", args[0])
		return 1
	}
	err := run(args, stdout, stderr, getenv)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "kubectl-confighash: error: %s\n", err)
		return 1
	}
	return 0
}

func run(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	var opts Options
	var kubeconfig, kubeContext, keyFile string
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&kubeContext, "context", "", "kubeconfig context")
	fs.StringVar(&opts.Namespace, "namespace", "", "namespace (default the context's)")
	fs.StringVar(&opts.Namespace, "n", "", "namespace (short for --namespace)")
	fs.BoolVar(&opts.AllNamespaces, "all-namespaces", false, "every namespace")
	fs.BoolVar(&opts.AllNamespaces, "A", false, "every namespace (short for --all-namespaces)")
	fs.StringVar(&opts.Prefix, "prefix", annotations.DefaultPrefix, "annotation prefix")
	fs.StringVar(&keyFile, "hmac-key-file", "", "the controller's HMAC key file, when it runs keyed (also $CONFIGHASH_HMAC_KEY_FILE, or the key itself in $CONFIGHASH_HMAC_KEY)")
	asJSON := fs.Bool("json", false, "print JSON")
	var format string
	fs.StringVar(&format, "output", "", "output format, as for kubectl: json (the same as --json), or wide or empty for the table")
	fs.StringVar(&format, "o", "", "output format (short for --output)")
	timeout := fs.Duration("request-timeout", 30*time.Second, "give up on a request after this long, as kubectl does (0: never)")
	if err := fs.Parse(args); err != nil {
		// Help asked for is the output; after a flag error, the usage
		// follows the error on standard error.
		w := stderr
		if errors.Is(err, flag.ErrHelp) {
			w = stdout
		}
		fmt.Fprint(w, usage)
		fs.SetOutput(w)
		fs.PrintDefaults()
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	switch format {
	case "json":
		*asJSON = true
	case "", "wide":
		if format != "" && *asJSON {
			return fmt.Errorf("-o %s and --json exclude each other", format)
		}
	default:
		return fmt.Errorf("output format %q: status prints a table, or JSON with -o json", format)
	}
	key, err := hmackey.Load(keyFile, getenv)
	if err != nil {
		return err
	}
	opts.Key = key
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", yamlnode.HideQuoted(err))
	}
	if opts.Namespace == "" && !opts.AllNamespaces {
		if opts.Namespace, _, err = loader.Namespace(); err != nil {
			return fmt.Errorf("reading the context's namespace: %w", err)
		}
	}
	cfg.UserAgent = "kubectl-confighash"
	// Collect sends its requests one at a time, about five a workload:
	// client-go's default limit (5 a second after a burst of 10) made a
	// namespace of 40 workloads take 40 s. One request in
	// flight needs no client-side limit; the API server's priority and
	// fairness still applies.
	cfg.QPS = -1
	// Each request, as kubectl's --request-timeout: the report takes
	// about five requests a workload, so a bound on the whole would fail
	// a large namespace, or -A on a large cluster, however fast the API
	// server answers. 0: no timeout, as for kubectl.
	cfg.Timeout = *timeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making a client: %w", err)
	}
	ctx := context.Background()
	report, collectErr := Collect(ctx, cs, opts)
	if collectErr != nil && !errors.Is(collectErr, ErrUnreadable) && !errors.Is(collectErr, ErrKeyMismatch) {
		if opts.AllNamespaces && apierrors.IsForbidden(collectErr) {
			// Every list refused cluster-wide: a user with Roles only.
			return fmt.Errorf("%w\n-A lists every namespace at once, which takes a ClusterRole; with a Role, name its namespace: -n NAMESPACE", collectErr)
		}
		return collectErr
	}
	var b bytes.Buffer
	if *asJSON {
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	} else {
		err = WriteTable(&b, report, time.Now())
	}
	if err != nil {
		return err
	}
	if _, err := stdout.Write(b.Bytes()); err != nil {
		return err
	}
	return collectErr
}
