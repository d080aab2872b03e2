package cli

import (
	"fmt"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/stream"
)

// runStream hashes a plain multi-document stream, editing its bytes in
// place. Nothing is written unless the whole stream succeeds.
func runStream(o options, input []byte, stdio IO) error {
	out, report, err := stream.Process(input, o.Options)
	if err != nil {
		return err
	}
	if !o.quiet {
		for _, f := range report.Findings {
			if f.Severity != inject.SeverityInfo {
				fmt.Fprintf(stdio.Err, "confighash: %s\n", f)
			}
		}
	}
	_, err = stdio.Out.Write(out)
	return err
}
