package inject

import (
	"fmt"
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
)

// Object identifies one document of the stream, for reports and errors.
type Object struct {
	// Index is the document's position in the stream (from the reader's
	// index annotation when present), Path its source file when known.
	Index      int
	Path       string
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// String names the object the way errors and warnings show it, for example
// `Deployment shop/web (document 3, deploy.yaml)`.
func (o Object) String() string {
	where := "document " + strconv.Itoa(o.Index)
	if o.Path != "" {
		where += ", " + o.Path
	}
	return fmt.Sprintf("%s %s (%s)", o.Kind, hashing.ObjectName(o.Namespace, o.Name), where)
}

// identify reads a document's identity; position is its place in the slice,
// used when the reader left no index annotation.
func identify(node *yaml.RNode, position int, defaultNamespace string) (Object, error) {
	o := Object{Index: position}
	path, index, err := kioutil.GetFileAnnotations(node)
	if err != nil {
		return o, fmt.Errorf("document %d: reading its annotations: %w", position, err)
	}
	o.Path = path
	if n, err := strconv.Atoi(index); err == nil && index != "" {
		o.Index = n
	}
	meta, err := node.GetMeta()
	if err != nil {
		return o, fmt.Errorf("document %d: %w", position, err)
	}
	o.APIVersion, o.Kind, o.Name, o.Namespace = meta.APIVersion, meta.Kind, meta.Name, meta.Namespace
	if o.Namespace == "" {
		o.Namespace = defaultNamespace
	}
	return o, nil
}

// group returns the API group of the object's apiVersion.
func (o Object) group() string {
	for i := 0; i < len(o.APIVersion); i++ {
		if o.APIVersion[i] == '/' {
			return o.APIVersion[:i]
		}
	}
	return ""
}

// isConfig reports whether the object is a core ConfigMap or Secret.
func (o Object) isConfig() bool {
	return o.APIVersion == "v1" && (o.Kind == string(hashing.KindConfigMap) || o.Kind == string(hashing.KindSecret))
}
