package cli

import (
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/output"
	"github.com/confighash/confighash/internal/rolldiff"
	"github.com/confighash/confighash/internal/yamlnode"
)

// uncheckedHashes names the objects of input that carry a hash annotation
// (key) below their spec but are not workloads of r: kinds verify was not
// told about (the functionConfig's workloads, which a render reads and
// verify does not), whose hashes it therefore did not check. Each entry is
// "Kind namespace/name: key at field.path". Input that holds key anywhere
// must be YAML throughout.
func uncheckedHashes(input []byte, key string, r *inject.Report) ([]string, error) {
	if !bytes.Contains(input, []byte(key)) {
		return nil, nil
	}
	read := map[string]bool{}
	for _, w := range r.Workloads {
		read[w.Kind+"/"+w.Name] = true
	}
	docs, _, err := rolldiff.ReadObjects(input, inject.Options{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, doc := range docs {
		for _, obj := range objects(doc.YNode()) {
			kind, name := yamlnode.Child(obj, "kind"), yamlnode.Child(yamlnode.Child(obj, "metadata"), "name")
			if kind == nil || name == nil || read[kind.Value+"/"+name.Value] {
				continue
			}
			if path := annotationPath(yamlnode.Child(obj, "spec"), key, "spec"); path != "" {
				ns := yamlnode.Child(yamlnode.Child(obj, "metadata"), "namespace")
				id := output.WorkloadID(kind.Value, "", name.Value)
				if ns != nil {
					id = output.WorkloadID(kind.Value, ns.Value, name.Value)
				}
				out = append(out, id+": "+key+" at "+path+", not checked")
			}
		}
	}
	return out, nil
}

// objects are the objects of a document: the items of a ResourceList or of
// a list kind, or the document itself.
func objects(doc *yaml.Node) []*yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	kind := yamlnode.Child(n, "kind")
	if items := yamlnode.Child(n, "items"); kind != nil && strings.HasSuffix(kind.Value, "List") && items != nil && items.Kind == yaml.SequenceNode {
		var out []*yaml.Node
		for _, item := range items.Content {
			out = append(out, objects(item)...)
		}
		return out
	}
	return []*yaml.Node{n}
}

// annotationPath is the field path (from path, the path of n) of the first
// annotations mapping below n that holds key; empty when there is none.
func annotationPath(n *yaml.Node, key, path string) string {
	if n != nil && n.Kind == yaml.SequenceNode {
		for i, item := range n.Content {
			if p := annotationPath(item, key, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		if k == "annotations" && yamlnode.Child(v, key) != nil {
			return path + ".annotations"
		}
		if p := annotationPath(v, key, path+"."+k); p != "" {
			return p
		}
	}
	return ""
}
