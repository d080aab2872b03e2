package annotations

import (
	"strings"

	"github.com/confighash/confighash/hashing"
)

// FormatExternal writes the value of the External annotation: the uses as
// Kind/name (hashing.Use.Ref), in the order given, separated by commas.
func FormatExternal(uses []hashing.Use) string {
	refs := make([]string, len(uses))
	for i, u := range uses {
		refs[i] = u.Ref()
	}
	return strings.Join(refs, ",")
}

// ParseExternal reads the value of the External annotation into the set of
// Kind/name it lists. White space around an entry and empty entries are
// ignored, as a hand-edited list may hold them.
func ParseExternal(s string) map[string]bool { return ParseList(s) }

// ParseList reads a comma-separated annotation value (the External list, or
// the Reloader and Wave lists the controller honours) into a set, ignoring
// white space around entries and empty entries.
func ParseList(s string) map[string]bool {
	out := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out[item] = true
		}
	}
	return out
}
