// Command confighash is the render-time tool: a KRM function for kustomize and
// kpt, and a Helm post-renderer. See internal/cli.
package main

import (
	"os"

	"github.com/confighash/confighash/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
