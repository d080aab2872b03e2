// Command confighash-controller rolls workloads when a ConfigMap or Secret
// they consume is edited out of band. See docs/controller.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/manager/signals"

	"github.com/confighash/confighash/controller"
)

func main() {
	opts, err := controller.ParseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err == nil {
		err = controller.Run(signals.SetupSignalHandler(), opts)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "confighash-controller:", err)
		os.Exit(1)
	}
}
