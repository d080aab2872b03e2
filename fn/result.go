package fn

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Severity is a KRM result's severity, written as the KRM function
// specification and kyaml's framework write it.
type Severity string

// The severities a result can carry; each is the word of the inject finding's
// severity of the same name.
const (
	// Error makes the function fail: nothing is written.
	Error Severity = "error"
	// Warning is reported and the output is still written.
	Warning Severity = "warning"
	// Info is reported in the results only.
	Info Severity = "info"
)

// Result is one entry of a ResourceList's results. Its fields, their order and
// their omitempty tags are those of kyaml's framework.Result, so the results
// are written exactly as a framework function writes them; the fields the
// function never sets (field, tags) are left out.
type Result struct {
	// Message is the finding, for people.
	Message string `yaml:"message,omitempty" json:"message,omitempty"`
	// Severity is error, warning or info.
	Severity Severity `yaml:"severity,omitempty" json:"severity,omitempty"`
	// ResourceRef names the object the result is about.
	ResourceRef *yaml.ResourceIdentifier `yaml:"resourceRef,omitempty" json:"resourceRef,omitempty"`
	// File is the object's file and index within it, from its annotations.
	File *File `yaml:"file,omitempty" json:"file,omitempty"`
}

// File locates an object in the files it was read from.
type File struct {
	// Path is the file's path, relative as the annotation gives it.
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// Index is the object's index among the file's documents.
	Index int `yaml:"index,omitempty" json:"index,omitempty"`
}

// String is the result for people, as kyaml's framework.Result writes it:
// "[severity] apiVersion/kind/namespace/name: message", leaving out empty
// parts, with an empty severity read as info.
func (r Result) String() string {
	var id []string
	if ref := r.ResourceRef; ref != nil {
		for _, s := range []string{ref.APIVersion, ref.Kind, ref.Namespace, ref.Name} {
			if s != "" {
				id = append(id, s)
			}
		}
	}
	sev := r.Severity
	if sev == "" {
		sev = Info
	}
	if len(id) == 0 {
		return fmt.Sprintf("[%s]: %s", sev, r.Message)
	}
	return fmt.Sprintf("[%s] %s: %s", sev, strings.Join(id, "/"), r.Message)
}

// Results are a ResourceList's results.
type Results []*Result

// Error joins the results' strings with a blank line between them, so that
// Results can be returned as an error.
func (rs Results) Error() string {
	msgs := make([]string, 0, len(rs))
	for _, r := range rs {
		msgs = append(msgs, r.String())
	}
	return strings.Join(msgs, "\n\n")
}

// ExitCode is 1 when a result is an error, 0 otherwise.
func (rs Results) ExitCode() int {
	for _, r := range rs {
		if r.Severity == Error {
			return 1
		}
	}
	return 0
}

// ResourceList is the part of a KRM ResourceList the function works on.
type ResourceList struct {
	// Items are the objects, changed in place by the filter.
	Items []*yaml.RNode
	// FunctionConfig is the functionConfig, nil when there is none.
	FunctionConfig *yaml.RNode
	// Results are what the function found.
	Results Results
}
