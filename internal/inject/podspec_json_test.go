package inject

import (
	"errors"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/yamlnode"
	"github.com/confighash/confighash/internal/yamlnorm"
)

// podSpecViaJSON is the reference readPodSpec is held to: the referencing
// fields converted to JSON and decoded by the API machinery's
// case-sensitive decoder.
func podSpecViaJSON(template *yaml.RNode) (*corev1.PodSpec, error) {
	spec := &corev1.PodSpec{}
	n := yamlnode.Child(template.YNode(), "spec")
	if isNull(n) {
		return spec, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, errors.New("expected an object")
	}
	w := jsonWriter{budget: yamlnorm.MaxNodes}
	w.b = append(w.b, '{')
	first := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		switch k {
		case "volumes", "imagePullSecrets":
			w.field(&first, k, v, nil)
		case "initContainers", "containers", "ephemeralContainers":
			w.field(&first, k, v, containerFields)
		}
	}
	w.b = append(w.b, '}')
	if w.err != nil {
		return nil, w.err
	}
	// Field names are case-sensitive, as in the API server's decoder.
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(w.b, spec); err != nil {
		return nil, err
	}
	return spec, nil
}

// containerFields are the container fields that reference config objects.
var containerFields = map[string]bool{"name": true, "env": true, "envFrom": true}

// jsonWriter converts yaml nodes to JSON the way the API server reads YAML:
// scalars by their resolved tag, aliases expanded within a budget.
type jsonWriter struct {
	b      []byte
	budget int
	err    error
}

func (w *jsonWriter) field(first *bool, key string, v *yaml.Node, keep map[string]bool) {
	if !*first {
		w.b = append(w.b, ',')
	}
	*first = false
	w.b = appendString(w.b, key)
	w.b = append(w.b, ':')
	if keep == nil || v.Kind != yaml.SequenceNode {
		w.node(v)
		return
	}
	// A list of containers: keep only the fields that matter.
	w.b = append(w.b, '[')
	for i, item := range v.Content {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.filtered(item, keep)
	}
	w.b = append(w.b, ']')
}

func (w *jsonWriter) filtered(n *yaml.Node, keep map[string]bool) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		w.node(n)
		return
	}
	w.b = append(w.b, '{')
	first := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		if keep[n.Content[i].Value] {
			w.field(&first, n.Content[i].Value, n.Content[i+1], nil)
		}
	}
	w.b = append(w.b, '}')
}

func (w *jsonWriter) node(n *yaml.Node) {
	if w.err != nil {
		return
	}
	if w.budget--; w.budget < 0 {
		w.err = errors.New("yaml: document contains excessive aliasing")
		return
	}
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		w.b = append(w.b, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendString(w.b, resolve(n.Content[i]).Value)
			w.b = append(w.b, ':')
			w.node(n.Content[i+1])
		}
		w.b = append(w.b, '}')
	case yaml.SequenceNode:
		w.b = append(w.b, '[')
		for i, c := range n.Content {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.node(c)
		}
		w.b = append(w.b, ']')
	case yaml.ScalarNode:
		w.scalar(n)
	default:
		w.b = append(w.b, "null"...)
	}
}

func (w *jsonWriter) scalar(n *yaml.Node) {
	switch n.ShortTag() {
	case yaml.NodeTagNull:
		w.b = append(w.b, "null"...)
	case yaml.NodeTagBool:
		if b, err := strconv.ParseBool(n.Value); err == nil {
			w.b = strconv.AppendBool(w.b, b)
			return
		}
		w.b = appendString(w.b, n.Value)
	case yaml.NodeTagInt:
		if i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
			w.b = strconv.AppendInt(w.b, i, 10)
			return
		}
		w.b = appendString(w.b, n.Value)
	case yaml.NodeTagFloat:
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			w.b = strconv.AppendFloat(w.b, f, 'g', -1, 64)
			return
		}
		w.b = appendString(w.b, n.Value)
	default:
		w.b = appendString(w.b, n.Value)
	}
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
