package fn

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/inject"
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

// LoadConfig reads a functionConfig: nil means defaults; a v1 ConfigMap is
// read from its data; a ConfigHash object strictly. Unknown fields, unknown
// kinds and invalid values are errors.
func LoadConfig(node *yaml.RNode) (inject.Options, error) {
	if node == nil || node.IsNilOrEmpty() {
		return inject.Options{}, nil
	}
	meta, err := node.GetMeta()
	if err != nil {
		return inject.Options{}, fmt.Errorf("functionConfig: %w", err)
	}
	var opts inject.Options
	switch {
	case meta.APIVersion == "v1" && meta.Kind == "ConfigMap":
		opts, err = fromConfigMap(node)
	case meta.APIVersion == APIVersion && meta.Kind == Kind:
		opts, err = fromTyped(node)
	default:
		err = fmt.Errorf("kind %s %s is not supported: use a v1 ConfigMap or %s %s", meta.APIVersion, meta.Kind, APIVersion, Kind)
	}
	if err == nil {
		err = opts.Validate()
	}
	if err != nil {
		return inject.Options{}, fmt.Errorf("functionConfig %s: %w", meta.Name, err)
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
		return inject.Options{}, err
	}
	return c.Options(), nil
}

func fromConfigMap(node *yaml.RNode) (inject.Options, error) {
	data := node.GetDataMap()
	var unknown []string
	for k := range data {
		if !contains(configMapKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return inject.Options{}, fmt.Errorf("unknown data keys %s (known: %s)", strings.Join(unknown, ", "), strings.Join(configMapKeys, ", "))
	}
	opts := inject.Options{Prefix: data["annotationPrefix"], DefaultNamespace: data["namespace"]}
	for _, spec := range strings.FieldsFunc(data["workloads"], func(r rune) bool { return r == ',' || r == '\n' }) {
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
