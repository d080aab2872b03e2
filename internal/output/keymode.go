package output

import (
	"strings"

	"github.com/confighash/confighash/hashing"
)

// Why a render-time hash cannot be checked with the HMAC key a report was
// given: the words `confighash diff --json` (a stale hash's cause) and
// `kubectl confighash status --json` (a workload's keyMismatch) both print.
const (
	// KeyMismatchKeyed: made with an HMAC key, and the report has none.
	KeyMismatchKeyed = "keyed"
	// KeyMismatchUnkeyed: made without a key, and the report has one.
	KeyMismatchUnkeyed = "unkeyed"
	// KeyMismatchOtherKey: made with an HMAC key whose key id is not the
	// report's.
	KeyMismatchOtherKey = "other-key"
)

// KeyMismatch says whether hash, a render-time hash annotation next to the
// key id annotation renderKeyID, was made in another HMAC mode than a
// report given the key whose id is keyID ("" without a key):
// KeyMismatchKeyed, KeyMismatchUnkeyed, KeyMismatchOtherKey, or "" when the
// modes agree (or hash is no value of either mode).
func KeyMismatch(hash, renderKeyID, keyID string) string {
	keyed := strings.HasPrefix(hash, hashing.KeyedPrefix)
	switch {
	case keyed && keyID == "":
		return KeyMismatchKeyed
	case !keyed && strings.HasPrefix(hash, hashing.PlainPrefix) && keyID != "":
		return KeyMismatchUnkeyed
	case keyed && renderKeyID != "" && renderKeyID != keyID:
		return KeyMismatchOtherKey
	}
	return ""
}
