package postrenderer

import (
	"bytes"

	"github.com/confighash/confighash/internal/inject"
)

// Unread returns input without the documents Process copies unread (by the
// same rule), and how many there were.
func Unread(input []byte, opts inject.Options) ([]byte, int) {
	var kept [][]byte
	n := 0
	for _, c := range split(input) {
		if h, ok := readHeader(c.text); ok && hasContent(c.text) && !opts.Relevant(h.apiVersion, h.kind) {
			n++
			kept = append(kept, []byte("---\n"))
			continue
		}
		kept = append(kept, c.text)
	}
	return bytes.Join(kept, nil), n
}

// ReadAsHelm4Installs reports whether Process reads a document of input as
// Helm 4 will install it rather than as written (helm4Installed), or leaves
// out a hook config Helm 4 does not create on every install and upgrade
// (helm4SkipsHook).
func ReadAsHelm4Installs(input []byte) bool {
	for _, c := range split(input) {
		if _, ok := helm4Installed(c.text); ok || helm4SkipsHook(c.text) {
			return true
		}
	}
	return false
}
