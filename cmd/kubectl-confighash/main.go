// Command kubectl-confighash is the kubectl plugin `kubectl confighash`:
// `kubectl confighash status` reports whether the workloads confighash
// manages run the configuration they should. See internal/status.
package main

import (
	"os"

	"github.com/confighash/confighash/internal/status"
)

func main() {
	os.Exit(status.Main(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}
