package hashing

import "strings"

// Mismatch says why a hash value cannot be compared with the values a reader
// computes: it was made in another mode (section 5 of HASHING.md) or is no
// value of this version. The words are those `confighash diff --json`,
// `explain --json` and `status --json` print.
type Mismatch string

// The mismatches CompareMode finds.
const (
	// MismatchKeyed: the value was made with an HMAC key; the reader has none.
	MismatchKeyed Mismatch = "keyed"
	// MismatchUnkeyed: the value was made without a key; the reader has one.
	MismatchUnkeyed Mismatch = "unkeyed"
	// MismatchOtherKey: the value was made with an HMAC key whose key id is
	// not the reader's.
	MismatchOtherKey Mismatch = "other-key"
	// MismatchUnknown: not a value of this version (IsValue is false).
	MismatchUnknown Mismatch = "unknown-version"
)

// CompareMode says whether value, a hash value written next to the key id
// valueKeyID ("" when there is none), can be compared with the values a
// reader holding the key whose id is keyID computes ("" for a reader without
// a key): "" when it can, else why not. A keyed value without a key id is
// taken to be made with the reader's key, so that a changed hash is read as
// changed content.
func CompareMode(value, valueKeyID, keyID string) Mismatch {
	if !IsValue(value) {
		return MismatchUnknown
	}
	keyed := strings.HasPrefix(value, KeyedPrefix)
	switch {
	case keyed && keyID == "":
		return MismatchKeyed
	case !keyed && keyID != "":
		return MismatchUnkeyed
	case keyed && valueKeyID != "" && valueKeyID != keyID:
		return MismatchOtherKey
	}
	return ""
}
