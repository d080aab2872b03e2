package inject

import (
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/yamlnode"
	"github.com/confighash/confighash/internal/yamlnorm"
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
	// written is the namespace as the document writes it, before
	// Options.DefaultNamespace fills an empty one: what kustomize compares
	// when it fixes a reference (see referral).
	written string
}

// String names the object the way errors and warnings show it, for example
// `Deployment shop/web (document 3, deploy.yaml)`.
func (o Object) String() string {
	if o.Name == "" {
		// No name to show (a List needs none).
		return fmt.Sprintf("%s (%s)", o.Kind, o.where())
	}
	return fmt.Sprintf("%s %s (%s)", o.Kind, hashing.ObjectName(o.Namespace, o.Name), o.where())
}

// where names the document: "document 3" or "document 3, deploy.yaml".
func (o Object) where() string {
	w := "document " + strconv.Itoa(o.Index)
	if o.Path != "" {
		w += ", " + o.Path
	}
	return w
}

// identify reads a document's identity. Only mappings are objects. The
// checks of aliases and metadata are for the documents confighash reads
// (opts.Relevant): one of another kind is left as it is, as the stream mode
// copies it unread, so that both modes accept the same documents.
func identify(d Doc, opts Options) (Object, error) { return identifyIn(Object{}, d, opts) }

// identifyItem is identify for an item of the list object list (see
// ItemType).
func identifyItem(list Object, d Doc, opts Options) (Object, error) { return identifyIn(list, d, opts) }

// ItemType returns the apiVersion and kind of an item of a list of kind
// listKind in listAPIVersion whose own are apiVersion and kind. An item of a
// typed list (a ConfigMapList, an apps/v1 DeploymentList) may name neither,
// as the API server lists them; kubectl and Helm create it as the list's
// kind without "List", in the list's apiVersion.
func ItemType(listAPIVersion, listKind, apiVersion, kind string) (string, string) {
	if apiVersion == "" && kind == "" && listKind != "List" && strings.HasSuffix(listKind, "List") {
		return listAPIVersion, strings.TrimSuffix(listKind, "List")
	}
	return apiVersion, kind
}

func identifyIn(list Object, d Doc, opts Options) (Object, error) {
	o := Object{Index: d.Index, Path: d.Path}
	if d.Node == nil {
		c := d.Config
		o.APIVersion, o.Kind, o.Name, o.Namespace = "v1", string(c.Kind), c.Name, c.Namespace
		o.written = o.Namespace
		if o.Namespace == "" {
			o.Namespace = opts.DefaultNamespace
		}
		return o, nil
	}
	n := d.Node.YNode()
	if n.Kind != yaml.MappingNode {
		if list.Kind != "" {
			// The caller names the item, with its List and index.
			return o, fmt.Errorf("not an object (found %s)", yamlnorm.Describe(n))
		}
		return o, fmt.Errorf("%s is not an object", o.where())
	}
	o.APIVersion, o.Kind = yamlnode.Text(n, "apiVersion"), yamlnode.Text(n, "kind")
	o.APIVersion, o.Kind = ItemType(list.APIVersion, list.Kind, o.APIVersion, o.Kind)
	if opts.Relevant(o.APIVersion, o.Kind) {
		// An item's errors are named by the caller, with its List and index.
		where := func(err error) error {
			if list.Kind != "" {
				return err
			}
			return fmt.Errorf("%s: %w", o.where(), err)
		}
		if err := checkAliases(n); err != nil {
			return o, where(err)
		}
		if err := CheckMetadata(d.Node); err != nil {
			return o, where(err)
		}
	}
	meta := yamlnode.Child(n, "metadata")
	o.Name, o.Namespace = yamlnode.Text(meta, "name"), yamlnode.Text(meta, "namespace")
	o.written = o.Namespace
	if o.Path == "" {
		// Helm 4 sends no "# Source:" comments but this annotation.
		o.Path, _ = Annotation(n, "postrenderer.helm.sh/postrender-filename")
	}
	if o.Namespace == "" {
		o.Namespace = opts.DefaultNamespace
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

// CheckMetadata makes sure metadata, and its annotations and labels, are
// maps when present (and the annotations and labels, names and namespace
// strings), so that reading or writing annotations is safe: for confighash,
// and for kio, which annotates every item it writes.
func CheckMetadata(node *yaml.RNode) error {
	meta := yamlnode.Child(node.YNode(), "metadata")
	if isNull(meta) {
		return nil
	}
	if meta.Kind != yaml.MappingNode {
		return fmt.Errorf("metadata is not an object")
	}
	for _, name := range []string{"annotations", "labels"} {
		f := yamlnode.Child(meta, name)
		if isNull(f) {
			continue
		}
		if f.Kind != yaml.MappingNode {
			return fmt.Errorf("metadata.%s is not a map", name)
		}
		for i := 1; i < len(f.Content); i += 2 {
			if v := f.Content[i]; v.Kind != yaml.ScalarNode {
				return fmt.Errorf("metadata.%s.%s is not a string", name, f.Content[i-1].Value)
			}
		}
	}
	for _, name := range []string{"name", "namespace"} {
		if f := yamlnode.Child(meta, name); !isNull(f) && f.Kind != yaml.ScalarNode {
			return fmt.Errorf("metadata.%s is not a string", name)
		}
	}
	return nil
}

// checkAliases refuses a document whose aliases would expand it beyond
// yamlnorm.MaxNodes nodes (an alias bomb) or that refers to itself.
// Documents without aliases cost one walk.
func checkAliases(n *yaml.Node) error {
	if !hasAlias(n) {
		return nil
	}
	if err := yamlnorm.CheckAliases(n); err != nil {
		return fmt.Errorf("yaml: %w", err)
	}
	return nil
}

func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode {
		return true
	}
	for _, c := range n.Content {
		if hasAlias(c) {
			return true
		}
	}
	return false
}
