package fn

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/yamlnode"
	"github.com/confighash/confighash/internal/yamlnorm"
)

// APIVersion and Kind of the typed functionConfig.
const (
	APIVersion = "confighash.dev/v1alpha1"
	Kind       = "ConfigHash"
)

// Config is the typed functionConfig:
//
//	apiVersion: confighash.dev/v1alpha1
//	kind: ConfigHash
//	metadata:
//	  name: confighash
//	annotationPrefix: confighash.dev
//	namespace: shop
//	workloads:
//	- {group: apps.kruise.io, kind: CloneSet, path: spec/template}
type Config struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	// AnnotationPrefix replaces confighash.dev in the annotation keys.
	AnnotationPrefix string `json:"annotationPrefix,omitempty"`
	// Namespace is given to objects that name none.
	Namespace string `json:"namespace,omitempty"`
	// Workloads adds pod template locations for other kinds.
	Workloads []inject.WorkloadKind `json:"workloads,omitempty"`
}

// Options turns the config into filter options.
func (c Config) Options() inject.Options {
	return inject.Options{Prefix: c.AnnotationPrefix, DefaultNamespace: c.Namespace, Workloads: c.Workloads}
}

// configMapKeys are the keys a ConfigMap functionConfig may hold.
var configMapKeys = []string{"annotationPrefix", "namespace", "workloads"}

// configMapFields are the fields of a ConfigMap functionConfig: its settings
// are under data.
var configMapFields = []string{"apiVersion", "kind", "metadata", "data"}

// LoadConfig reads a functionConfig: nil means defaults; a v1 ConfigMap is
// read from its data; a ConfigHash object strictly. Unknown fields, unknown
// kinds, values of the wrong type and invalid values are errors naming the
// field.
func LoadConfig(node *yaml.RNode) (inject.Options, error) {
	if node == nil || node.IsNilOrEmpty() {
		return inject.Options{}, nil
	}
	n := node.YNode()
	if n.Kind != yaml.MappingNode {
		return inject.Options{}, fmt.Errorf("functionConfig is not an object (found %s)", yamlnorm.Describe(n))
	}
	apiVersion, kind := yamlnode.Text(n, "apiVersion"), yamlnode.Text(n, "kind")
	name := yamlnode.Text(n, "metadata", "name")
	var opts inject.Options
	var err error
	switch {
	case apiVersion == "" && kind == "":
		return inject.Options{}, fmt.Errorf("functionConfig has no apiVersion and kind: use a v1 ConfigMap or %s %s", APIVersion, Kind)
	case apiVersion == "v1" && kind == "ConfigMap":
		opts, err = fromConfigMap(n)
	case apiVersion == APIVersion && kind == Kind:
		opts, err = fromTyped(node)
	case apiVersion == "":
		err = fmt.Errorf("kind %s (no apiVersion) is not supported: use a v1 ConfigMap or %s %s", kind, APIVersion, Kind)
	default:
		err = fmt.Errorf("kind %s %s is not supported: use a v1 ConfigMap or %s %s", apiVersion, kind, APIVersion, Kind)
	}
	if err == nil {
		err = opts.Validate()
	}
	if err != nil {
		if name == "" {
			return inject.Options{}, fmt.Errorf("functionConfig: %w", err)
		}
		return inject.Options{}, fmt.Errorf("functionConfig %s: %w", name, err)
	}
	return opts, nil
}

func fromTyped(node *yaml.RNode) (inject.Options, error) {
	raw, err := node.MarshalJSON()
	if err != nil {
		return inject.Options{}, err
	}
	var c Config
	if err := k8syaml.UnmarshalStrict(raw, &c); err != nil {
		// The strict decoder names a value of the wrong type by Go types;
		// the plain one says which field it is, in the user's words.
		var typeErr *json.UnmarshalTypeError
		if errors.As(json.Unmarshal(raw, &Config{}), &typeErr) {
			return inject.Options{}, fmt.Errorf("%s: found %s, want %s", typeErr.Field, jsonKind(typeErr.Value), goKind(typeErr.Type))
		}
		return inject.Options{}, err
	}
	return c.Options(), nil
}

// jsonKind names a JSON value kind as the YAML the user wrote has it.
func jsonKind(v string) string {
	switch v {
	case "array":
		return "a list"
	case "object":
		return "a map"
	case "bool":
		return "a boolean"
	}
	return "a " + v
}

// goKind names what a field of Config wants.
func goKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		return "a list"
	case reflect.Struct:
		return "an object (group, kind, path)"
	case reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	}
	return t.Kind().String()
}

// fromConfigMap reads a ConfigMap functionConfig (kpt's configMap: block):
// its settings are strings under data; a scalar written unquoted is read
// as its text, as kpt passes it.
func fromConfigMap(n *yaml.Node) (inject.Options, error) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if name, ok := yamlnode.NonScalar(n.Content[i]); ok {
			return inject.Options{}, fmt.Errorf("a field is %s, not a string", name)
		}
		if f := n.Content[i].Value; !contains(configMapFields, f) {
			return inject.Options{}, fmt.Errorf("unknown field %q: a ConfigMap functionConfig holds its settings under data (keys: %s)", f, strings.Join(configMapKeys, ", "))
		}
	}
	data := yamlnode.Child(n, "data")
	if data == nil || (data.Kind == yaml.ScalarNode && data.Tag == yaml.NodeTagNull) {
		return inject.Options{}, nil
	}
	if data.Kind != yaml.MappingNode {
		return inject.Options{}, fmt.Errorf("data: found %s, want a map", yamlnorm.Describe(data))
	}
	values := map[string]string{}
	var unknown []string
	for i := 0; i+1 < len(data.Content); i += 2 {
		if name, ok := yamlnode.NonScalar(data.Content[i]); ok {
			return inject.Options{}, fmt.Errorf("data: a key is %s, not a string", name)
		}
		k, v := data.Content[i].Value, data.Content[i+1]
		if !contains(configMapKeys, k) {
			unknown = append(unknown, k)
			continue
		}
		if v.Kind != yaml.ScalarNode {
			msg := fmt.Sprintf("data.%s: found %s, want a string", k, yamlnorm.Describe(v))
			if k == "workloads" {
				msg += " (Kind.group=path entries separated by commas or newlines)"
			}
			return inject.Options{}, errors.New(msg)
		}
		if v.Tag != yaml.NodeTagNull {
			values[k] = v.Value
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return inject.Options{}, fmt.Errorf("unknown data keys %s (known: %s)", strings.Join(unknown, ", "), strings.Join(configMapKeys, ", "))
	}
	opts := inject.Options{Prefix: values["annotationPrefix"], DefaultNamespace: values["namespace"]}
	for _, spec := range strings.FieldsFunc(values["workloads"], func(r rune) bool { return r == ',' || r == '\n' }) {
		w, err := inject.ParseWorkload(strings.TrimSpace(spec))
		if err != nil {
			return inject.Options{}, fmt.Errorf("data.workloads: %w", err)
		}
		opts.Workloads = append(opts.Workloads, w)
	}
	return opts, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
