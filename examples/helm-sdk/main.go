// Command helm-sdk renders a chart through the Helm SDK, Helm 4's or Helm
// 3's, with confighash as an in-process post-renderer, and prints the
// manifests the way `helm template` prints them:
//
//	go run . -namespace shop web ../helm
//
// prints what `helm template web ../helm --namespace shop --post-renderer
// confighash --post-renderer-args=--namespace=shop` prints, with no confighash
// binary or plugin involved. -helm 3 uses the Helm 3 SDK.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/confighash/confighash/examples/helm-sdk/helm3"
	"github.com/confighash/confighash/examples/helm-sdk/helm4"
	"github.com/confighash/confighash/postrenderer"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// run parses the command line, builds the post-renderer and renders.
func run(args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("helm-sdk", flag.ContinueOnError)
	flags.SetOutput(stderr)
	namespace := flags.String("namespace", "default", "the release namespace")
	major := flags.Int("helm", 4, "the Helm SDK to render with: 3 or 4")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: helm-sdk [-helm 3|4] [-namespace NS] RELEASE CHART")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() != 2 {
		flags.Usage()
		return fmt.Errorf("want RELEASE and CHART, got %d arguments", flags.NArg())
	}
	name, chart := flags.Arg(0), flags.Arg(1)

	// The post-renderer hashes the configs of the release namespace; its
	// warnings (a workload that reads a config the release lacks) go to
	// standard error.
	pr, err := postrenderer.New(postrenderer.Options{Namespace: *namespace, Warnings: stderr})
	if err != nil {
		return err
	}
	switch *major {
	case 3:
		return helm3.Render(stdout, chart, name, *namespace, pr)
	case 4:
		return helm4.Render(stdout, chart, name, *namespace, pr)
	default:
		return fmt.Errorf("-helm %d: want 3 or 4", *major)
	}
}
