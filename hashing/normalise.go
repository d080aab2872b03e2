package hashing

import (
	"encoding/base64"
	"fmt"
)

// Field is a field of a ConfigMap or Secret that holds content.
type Field string

// The content fields (section 3 of HASHING.md).
const (
	FieldData       Field = "data"
	FieldBinaryData Field = "binaryData"
	FieldStringData Field = "stringData"
)

// Fields returns the content fields of a kind, in the order the API server
// applies them: a ConfigMap's data and binaryData, a Secret's data and then
// stringData. Any other field of the object is not content.
func (k Kind) Fields() []Field {
	switch k {
	case KindConfigMap:
		return []Field{FieldData, FieldBinaryData}
	case KindSecret:
		return []Field{FieldData, FieldStringData}
	}
	return nil
}

// has reports whether f is a content field of the kind.
func (k Kind) has(f Field) bool {
	switch f {
	case FieldData:
		return k == KindConfigMap || k == KindSecret
	case FieldBinaryData:
		return k == KindConfigMap
	case FieldStringData:
		return k == KindSecret
	}
	return false
}

// encoded reports whether a manifest writes the values of the field
// base64-encoded: binaryData, and a Secret's data.
func (k Kind) encoded(f Field) bool {
	return f == FieldBinaryData || (k == KindSecret && f == FieldData)
}

// ContentBuilder is the one normaliser of section 3 of HASHING.md: every
// reader of ConfigMaps and Secrets (the YAML tree, the byte scanner, the
// typed objects of the API) feeds it each key of each content field, and it
// applies the rules — base64 decoding, a key twice in one field, a key in
// both data and binaryData, a Secret's stringData over its data whatever the
// order of the fields. Whether a value is a string at all is the reader's
// question: the builder receives bytes.
//
// Feed the entries of one field together; a field fed again after another
// is an error (a key written twice in the object). Errors name the field and
// the key, never the value. A builder may be reused with Reset, which keeps
// its decoding buffer.
type ContentBuilder struct {
	kind Kind
	keys map[string]Digest
	// first and current are the fields fed first and last.
	first, current Field
	// second holds the keys the second field set, once it starts.
	second map[string]struct{}
	// decoded is reused for base64-decoded values.
	decoded []byte
}

// NewContentBuilder returns a builder for an object of the kind.
func NewContentBuilder(kind Kind) *ContentBuilder {
	b := &ContentBuilder{}
	b.Reset(kind)
	return b
}

// Reset starts a new object of the kind, keeping the builder's buffers.
func (b *ContentBuilder) Reset(kind Kind) {
	*b = ContentBuilder{kind: kind, keys: map[string]Digest{}, decoded: b.decoded[:0]}
}

// Add records the value of key in field as a manifest writes it: base64
// text for binaryData and a Secret's data, the bytes themselves otherwise.
// value is not retained.
func (b *ContentBuilder) Add(field Field, key string, value []byte) error {
	if err := b.start(field); err != nil {
		return err
	}
	if b.kind.encoded(field) {
		return b.decode(field, key, value)
	}
	return b.put(field, key, DigestOf(value))
}

// AddString is Add for a value held as a string, as a YAML tree holds it.
func (b *ContentBuilder) AddString(field Field, key, value string) error {
	if err := b.start(field); err != nil {
		return err
	}
	if b.kind.encoded(field) {
		return b.decode(field, key, []byte(value))
	}
	return b.put(field, key, DigestOf([]byte(value)))
}

// AddDecoded records the value of key in field already decoded, as the
// typed objects of the API hold it (binaryData and a Secret's data as raw
// bytes). value is not retained.
func (b *ContentBuilder) AddDecoded(field Field, key string, value []byte) error {
	if err := b.start(field); err != nil {
		return err
	}
	return b.put(field, key, DigestOf(value))
}

// decode reads base64 as the API server does (base64.StdEncoding: padding
// required, CR and LF ignored, unused bits ignored) into the reused buffer,
// and records the digest of the bytes.
func (b *ContentBuilder) decode(field Field, key string, value []byte) error {
	n := base64.StdEncoding.DecodedLen(len(value))
	if cap(b.decoded) < n {
		b.decoded = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(b.decoded[:n], value)
	if err != nil {
		// The message of a base64 error gives only an offset, never the data.
		return fmt.Errorf("%s.%s: not valid base64: %w", field, key, err)
	}
	return b.put(field, key, DigestOf(b.decoded[:n]))
}

// Done returns the content built so far: its kind and key digests. The
// caller fills in the namespace and name. The builder must be Reset before
// it is fed again.
func (b *ContentBuilder) Done() Content {
	return Content{Kind: b.kind, Keys: b.keys}
}

// start checks that field is a content field of the kind and is not fed
// again after another field.
func (b *ContentBuilder) start(field Field) error {
	switch {
	case field == b.current:
		return nil
	case !b.kind.has(field):
		return fmt.Errorf("%s is not a field of a %s", field, b.kind)
	case b.current == "":
		b.first = field
	case field == b.first:
		return fmt.Errorf("%s appears twice", field)
	default:
		b.second = map[string]struct{}{}
	}
	b.current = field
	return nil
}

// put applies the rules on repeated keys and stores the digest.
func (b *ContentBuilder) put(field Field, key string, d Digest) error {
	_, seen := b.keys[key]
	if b.second == nil {
		// The first field: any repeat is within it.
		if seen {
			return fmt.Errorf("%s: key %q appears twice", field, key)
		}
		b.keys[key] = d
		return nil
	}
	if _, again := b.second[key]; again {
		return fmt.Errorf("%s: key %q appears twice", field, key)
	}
	b.second[key] = struct{}{}
	switch {
	case !seen:
	case b.kind == KindConfigMap:
		return fmt.Errorf("key %q is in both data and binaryData", key)
	case field == FieldData:
		return nil // a Secret's stringData, fed first, wins over its data
	}
	b.keys[key] = d
	return nil
}
