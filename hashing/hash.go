package hashing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
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
	sorted := append([]Use(nil), uses...)
	SortUses(sorted)
	h, prefix := newHash(opts)
	e := encoder{h: h}
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
	return prefix + hex.EncodeToString(h.Sum(nil))
}

func newHash(opts Options) (hash.Hash, string) {
	if len(opts.Key) > 0 {
		return hmac.New(sha256.New, opts.Key), KeyedPrefix
	}
	return sha256.New(), PlainPrefix
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

type encoder struct {
	h       hash.Hash
	buf     [8]byte
	scratch []byte
}

func (e *encoder) raw(s string) {
	e.scratch = append(e.scratch[:0], s...)
	_, _ = e.h.Write(e.scratch)
}

func (e *encoder) byte(b byte) {
	e.buf[0] = b
	_, _ = e.h.Write(e.buf[:1])
}

func (e *encoder) u32(n uint32) {
	binary.BigEndian.PutUint32(e.buf[:4], n)
	_, _ = e.h.Write(e.buf[:4])
}

func (e *encoder) str(s string) {
	e.u32(uint32(len(s)))
	e.raw(s)
}

// keys writes the consumed keys: every key of the object for a whole-object
// use, the named keys otherwise, each with a presence byte and its digest.
func (e *encoder) keys(u Use, c Content) {
	keys := c.SortedKeys()
	if !u.All {
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
		_, _ = e.h.Write(d[:])
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
