// Command confighash-controller rolls workloads when a ConfigMap or Secret
// they consume is edited out of band. See docs/controller.md; the wiring
// (flags, environment, loggers) is in internal/controllercmd, the
// controller in package controller.
package main

import (
	"os"

	"github.com/confighash/confighash/internal/controllercmd"
)

func main() {
	os.Exit(controllercmd.Main(os.Args[1:], os.Stdout, os.Stderr))
}
