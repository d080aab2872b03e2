package hashing

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"sort"
	"strings"
)

// Version names the encoding. It is part of every value, so a future encoding
// can be told apart instead of silently rolling every workload.
const Version = "v1"

// Prefixes of a hash value: plain SHA-256, or HMAC-SHA256 with a key.
const (
	PlainPrefix = Version + "-sha256:"
	KeyedPrefix = Version + "-hmac-sha256:"
)

// magic opens the encoded input so that no other confighash encoding, now or
// later, can produce the same bytes.
const magic = "confighash.dev/hash/v1\n"

// Lookup finds the content of a config object in the workload's namespace.
type Lookup func(kind Kind, name string) (Content, bool)

// Options tune Compute.
type Options struct {
	// Key, when not empty, turns the digest into HMAC-SHA256 under this key,
	// so that a value cannot be used to test guesses of a secret's content.
	Key []byte
}

// Compute returns the hash of what uses consume in namespace, as found by
// lookup. An object lookup cannot find is encoded as absent: its later
// appearance changes the value. The order of uses does not matter.
func Compute(namespace string, uses []Use, lookup Lookup, opts Options) string {
	sorted := uses
	if !usesSorted(uses) {
		sorted = append([]Use(nil), uses...)
		SortUses(sorted)
	}
	e := encoder{b: make([]byte, 0, 256)}
	e.raw(magic)
	e.u32(uint32(len(sorted)))
	for _, u := range sorted {
		e.str(string(u.Kind))
		e.str(namespace)
		e.str(u.Name)
		c, found := lookup(u.Kind, u.Name)
		if !found {
			e.byte(0)
			continue
		}
		e.byte(1)
		e.keys(u, c)
	}
	return value(e.b, opts)
}

// value digests the encoding and renders it with its prefix.
func value(encoding []byte, opts Options) string {
	var sum [sha256.Size]byte
	prefix := PlainPrefix
	if len(opts.Key) > 0 {
		m := hmac.New(sha256.New, opts.Key)
		_, _ = m.Write(encoding)
		m.Sum(sum[:0])
		prefix = KeyedPrefix
	} else {
		sum = sha256.Sum256(encoding)
	}
	var out [len(KeyedPrefix) + 2*sha256.Size]byte
	n := copy(out[:], prefix)
	hex.Encode(out[n:], sum[:])
	return string(out[:n+2*sha256.Size])
}

func usesSorted(uses []Use) bool {
	for i := 1; i < len(uses); i++ {
		a, b := uses[i-1], uses[i]
		if a.Kind > b.Kind || (a.Kind == b.Kind && a.Name > b.Name) {
			return false
		}
	}
	return true
}

// keyIDDomain separates the key id from every other use of the key.
const keyIDDomain = "confighash.dev/key-id/v1\n"

// KeyID names a key without revealing it (section 5 of HASHING.md): 16 hex
// digits, written next to a keyed value so that a holder of another key can
// tell "other key" from "changed content". Empty for no key.
func KeyID(key []byte) string {
	if len(key) == 0 {
		return ""
	}
	h := sha256.New()
	_, _ = h.Write([]byte(keyIDDomain))
	_, _ = h.Write(key)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// IsValue reports whether s has the shape of a confighash value.
func IsValue(s string) bool {
	rest, ok := strings.CutPrefix(s, PlainPrefix)
	if !ok {
		rest, ok = strings.CutPrefix(s, KeyedPrefix)
	}
	if !ok || len(rest) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// encoder builds the encoding of section 4 of HASHING.md.
type encoder struct {
	b []byte
}

func (e *encoder) raw(s string) { e.b = append(e.b, s...) }

func (e *encoder) byte(b byte) { e.b = append(e.b, b) }

func (e *encoder) u32(n uint32) { e.b = binary.BigEndian.AppendUint32(e.b, n) }

func (e *encoder) str(s string) {
	e.u32(uint32(len(s)))
	e.raw(s)
}

// keys writes the consumed keys: every key of the object for a whole-object
// use, the named keys otherwise, each with a presence byte and its digest.
func (e *encoder) keys(u Use, c Content) {
	var keys []string
	if u.All {
		keys = c.SortedKeys()
	} else {
		keys = normaliseKeys(u.Keys)
	}
	e.u32(uint32(len(keys)))
	for _, k := range keys {
		e.str(k)
		d, ok := c.Keys[k]
		if !ok {
			e.byte(0)
			continue
		}
		e.byte(1)
		e.b = append(e.b, d[:]...)
	}
}

// normaliseKeys returns keys sorted and without repeats; Discover already
// gives them so, callers that build a Use by hand may not.
func normaliseKeys(keys []string) []string {
	if sort.StringsAreSorted(keys) && !hasRepeat(keys) {
		return keys
	}
	out := append([]string(nil), keys...)
	sort.Strings(out)
	return slices.Compact(out)
}

func hasRepeat(sorted []string) bool {
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return true
		}
	}
	return false
}

// keySpace is the white space TrimKey removes: ASCII space, tab, line feed,
// vertical tab, form feed and carriage return (section 5 of HASHING.md).
const keySpace = " \t\n\v\f\r"

// TrimKey returns the HMAC key held in raw, the content of a key file or
// variable: the ASCII white space around it (an editor's or echo's final
// newline) is not part of the key; any other byte, non-breaking spaces
// included, is.
func TrimKey(raw []byte) []byte { return bytes.Trim(raw, keySpace) }
