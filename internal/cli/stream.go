package cli

import (
	"github.com/confighash/confighash/postrenderer"
)

// runStream hashes a plain multi-document stream with the Helm
// post-renderer, which edits its bytes in place. Nothing is written unless
// the whole stream succeeds.
func runStream(o options, input []byte, stdio IO) error {
	opts := postrenderer.Options{Namespace: o.DefaultNamespace, AnnotationPrefix: o.Prefix, HMACKey: o.Key}
	for _, w := range o.Workloads {
		opts.Workloads = append(opts.Workloads, postrenderer.Workload{Group: w.Group, Kind: w.Kind, Path: w.Path})
	}
	if !o.quiet {
		opts.Warnings = stdio.Err
	}
	pr, err := postrenderer.New(opts)
	if err != nil {
		return err
	}
	return pr.Render(input, stdio.Out)
}
