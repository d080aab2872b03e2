// Package output holds what confighash's reports print alike: the name of
// a workload in text and JSON; the JSON record of a ConfigMap or Secret a
// workload consumes, which `confighash explain --json` and `kubectl
// confighash status --json` both write; and why a render-time hash cannot be
// checked with the HMAC key a report was given, which `confighash diff` and
// status both name.
package output

import (
	"cmp"
	"strings"

	"github.com/confighash/confighash/hashing"
)

// WorkloadID names a workload as "Kind namespace/name" (or "Kind name"
// without a namespace).
func WorkloadID(kind, namespace, name string) string {
	return kind + " " + hashing.ObjectName(namespace, name)
}

// Ref is the kind, namespace and name of a workload or config in a report's
// JSON; the reports embed it, so the three fields lead each record.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// ID names the object as WorkloadID does.
func (r Ref) ID() string { return WorkloadID(r.Kind, r.Namespace, r.Name) }

// Compare orders objects as the reports list them: by namespace, then kind,
// then name.
func (r Ref) Compare(o Ref) int {
	return cmp.Or(strings.Compare(r.Namespace, o.Namespace), strings.Compare(r.Kind, o.Kind), strings.Compare(r.Name, o.Name))
}

// Consumed is one ConfigMap or Secret a workload consumes: which keys, or
// all of them, and whether the render-time hash covers it.
type Consumed struct {
	Kind     string   `json:"kind"`
	Name     string   `json:"name"`
	Keys     []string `json:"keys,omitempty"`
	Whole    bool     `json:"whole"`
	Optional bool     `json:"optional,omitempty"`
	// External is true when the render-time hash does not cover it.
	External bool `json:"external"`
}

// ConsumedOf is the record of use u; external says the render-time hash
// does not cover the object.
func ConsumedOf(u hashing.Use, external bool) Consumed {
	return Consumed{Kind: string(u.Kind), Name: u.Name, Keys: u.Keys, Whole: u.All, Optional: u.Optional, External: external}
}

// Plural is one when n is 1 and many otherwise: "1 workload", "2
// workloads" in the reports' sentences.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
