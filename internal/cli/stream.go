package cli

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/confighash/confighash/internal/inject"
)

// runStream reads a plain multi-document stream, runs the filter and writes
// the stream back. Nothing is written unless the whole stream succeeds.
func runStream(o options, input []byte, stdio IO) error {
	var out bytes.Buffer
	var report inject.Report
	rw := &kio.ByteReadWriter{Reader: bytes.NewReader(input), Writer: &out, PreserveSeqIndent: true}
	nodes, err := rw.Read()
	if err != nil {
		return fmt.Errorf("reading the YAML stream: %w", err)
	}
	nodes, err = inject.Filter{Options: o.Options, Report: &report}.Filter(nodes)
	if err != nil {
		return err
	}
	if err := rw.Write(nodes); err != nil {
		return fmt.Errorf("writing the YAML stream: %w", err)
	}
	if !o.quiet {
		for _, f := range report.Findings {
			if f.Severity != inject.SeverityInfo {
				fmt.Fprintf(stdio.Err, "confighash: %s\n", f)
			}
		}
	}
	_, err = stdio.Out.Write(out.Bytes())
	return err
}
