package controller

import "github.com/confighash/confighash/hashing"

// missingKeyRef names a required key that its config lacks, as an entry of
// Input.Missing: "Kind/name key k".
func missingKeyRef(ref, key string) string { return ref + " key " + key }

// Missing lists what of use u's config the pods cannot start without: the
// config itself when it is not found and not optional, or the required keys
// (RequiredKeys) its content c lacks. The controller does not roll while
// anything is missing, and kubectl confighash status reports it as blocked.
func (v View) Missing(u hashing.Use, c hashing.Content, found bool) []string {
	if !found {
		if u.Optional {
			return nil
		}
		return []string{u.Ref()}
	}
	var out []string
	for _, key := range v.RequiredKeys[u.Ref()] {
		if _, ok := c.Keys[key]; !ok {
			out = append(out, missingKeyRef(u.Ref(), key))
		}
	}
	return out
}
