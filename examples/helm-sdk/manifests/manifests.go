// Package manifests writes a rendered release the way `helm template`
// prints it, whichever Helm SDK rendered it.
package manifests

import (
	"fmt"
	"io"
	"strings"
)

// Hook is one rendered hook: the template it comes from and its manifest.
type Hook struct {
	Path, Manifest string
}

// Write writes a release's manifest and then its hooks to w, each hook as a
// document of its own under a `# Source:` comment, in one write: nothing is
// written when the writer is never reached.
func Write(w io.Writer, manifest string, hooks []Hook) error {
	var out strings.Builder
	fmt.Fprintln(&out, strings.TrimSpace(manifest))
	for _, h := range hooks {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	_, err := io.WriteString(w, out.String())
	return err
}
