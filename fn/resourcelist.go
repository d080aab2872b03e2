package fn

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/yamlnode"
	"github.com/confighash/confighash/internal/yamlnorm"
)

// checkResourceList parses a ResourceList and makes it read as kubectl and the
// API server would read its items: items must be a list of objects, a key
// written twice in one mapping is an error naming the item, and anchors,
// aliases and merge keys are expanded (alias bombs refused). It returns the
// ResourceList's root mapping, expanded in place, and whether there was
// anything to expand.
//
// The ResourceList must be the only document: kio reads a ResourceList next
// to any other document, an empty one included, as an object of a stream,
// and writes it back annotated, unhashed. Empty documents around it are
// dropped (the ResourceList is then written anew, which counts as
// expanded). A ResourceList with neither items nor functionConfig, which kio
// would not unwrap either, gets an empty items list.
func checkResourceList(input []byte) (*yaml.Node, bool, error) {
	docs, err := documents(input)
	if err != nil {
		return nil, false, fmt.Errorf("reading the ResourceList: %w", err)
	}
	if len(docs) > 1 {
		second := docs[1]
		return nil, false, fmt.Errorf("the input holds %d YAML documents: a KRM function reads one ResourceList (document 1 is %s)", len(docs), describeDoc(second))
	}
	if len(docs) == 0 || docs[0].Kind != yaml.MappingNode {
		return nil, false, errors.New("the ResourceList is not an object")
	}
	root := docs[0]
	// kio cuts the text at every line starting with "---": with such a line,
	// the one document is written anew for kio.
	changed := bytes.HasPrefix(input, []byte("---")) || bytes.Contains(input, []byte("\n---"))
	if yamlnode.Child(root, "items") == nil && yamlnode.Child(root, "functionConfig") == nil &&
		valueOf(yamlnode.Child(root, "kind")) == kio.ResourceListKind {
		root.Content = append(root.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: "items"},
			&yaml.Node{Kind: yaml.SequenceNode, Tag: yaml.NodeTagSeq, Style: yaml.FlowStyle})
		changed = true
	}
	if items := yamlnode.Child(root, "items"); items != nil && (items.Kind != yaml.ScalarNode || items.Tag != yaml.NodeTagNull) {
		if items.Kind != yaml.SequenceNode {
			return nil, false, fmt.Errorf("the ResourceList's items is not a list (found %s)", yamlnorm.Describe(items))
		}
		for i, it := range items.Content {
			if it.Kind == yaml.AliasNode && it.Alias != nil {
				it = it.Alias
			}
			if it.Kind != yaml.MappingNode {
				return nil, false, fmt.Errorf("ResourceList items[%d] is not an object (found %s)", i, yamlnorm.Describe(it))
			}
			name := strings.TrimSpace(valueOf(yamlnode.Child(it, "kind")) + " " + valueOf(yamlnode.Path(it, "metadata", "name")))
			r, err := yamlnorm.Normalise(it)
			if err != nil {
				return nil, false, fmt.Errorf("ResourceList items[%d] (%s): %w", i, name, yamlnode.EditorLines(input, err))
			}
			changed = changed || r != nil
		}
	}
	r, err := yamlnorm.Normalise(root)
	if err != nil {
		return nil, false, fmt.Errorf("the ResourceList: %w", yamlnode.EditorLines(input, err))
	}
	return root, changed || r != nil, nil
}

// documents returns the documents of input that hold something: a document
// of comments only, or an empty one between two separators, is none.
func documents(input []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(input))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, yamlnode.ParseError(input, err)
		}
		if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 && !isNull(doc.Content[0]) {
			docs = append(docs, doc.Content[0])
		}
	}
}

// describeDoc names a document for a message: its kind and name, or what
// it is when it is no object.
func describeDoc(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return yamlnorm.Describe(n)
	}
	if s := strings.TrimSpace(valueOf(yamlnode.Child(n, "kind")) + " " + valueOf(yamlnode.Path(n, "metadata", "name"))); s != "" {
		return s
	}
	return "an object without kind"
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == yaml.NodeTagNull
}

func valueOf(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	return n.Value
}
