package postrenderer

import (
	"bytes"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/yamlnode"
)

// Unread returns input without the documents Process copies unread (by the
// same rule), and without such items of a List, and how many there were.
func Unread(input []byte, opts inject.Options) ([]byte, int) {
	var kept [][]byte
	n := 0
	for _, c := range split(input) {
		h, ok := readHeader(c.text)
		if ok && hasContent(c.text) && !opts.Relevant(h.apiVersion, h.kind) {
			n++
			kept = append(kept, []byte("---\n"))
			continue
		}
		if !ok || strings.HasSuffix(h.kind, "List") {
			if text, dropped := unreadItems(c.text, opts); dropped > 0 {
				n += dropped
				kept = append(kept, []byte("---\n"), text)
				continue
			}
		}
		kept = append(kept, c.text)
	}
	return bytes.Join(kept, nil), n
}

// unreadItems returns a List document (one whose header readHeader cannot
// read is parsed to tell) without the items Process copies
// unread (objects of a kind no option makes relevant, or with no kind),
// written anew, and how many it left out; 0 when it cannot tell.
func unreadItems(text []byte, opts inject.Options) ([]byte, int) {
	var doc yaml.Node
	if yaml.Unmarshal(text, &doc) != nil || len(doc.Content) == 0 {
		return nil, 0
	}
	root := doc.Content[0]
	listAPIVersion, listKind := yamlnode.Text(root, "apiVersion"), yamlnode.Text(root, "kind")
	if !strings.HasSuffix(listKind, "List") {
		return nil, 0
	}
	items := yamlnode.Child(root, "items")
	if items == nil || items.Kind != yaml.SequenceNode {
		return nil, 0
	}
	var read []*yaml.Node
	for _, it := range items.Content {
		if it.Kind == yaml.MappingNode {
			// An item of a typed list (a ConfigMapList) may name no kind.
			apiVersion, kind := inject.ItemType(listAPIVersion, listKind, yamlnode.Text(it, "apiVersion"), yamlnode.Text(it, "kind"))
			if kind == "" || !opts.Relevant(apiVersion, kind) {
				continue
			}
		}
		read = append(read, it)
	}
	dropped := len(items.Content) - len(read)
	if dropped == 0 {
		return nil, 0
	}
	items.Content = read
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, 0
	}
	return out, dropped
}

// ReadAsHelm4Installs reports whether Process reads a document of input as
// Helm 4 will install it rather than as written (helm4Installed), or leaves
// out a hook config Helm 4 does not create on every install and upgrade
// (helm4SkipsHook).
func ReadAsHelm4Installs(input []byte) bool {
	for _, c := range split(input) {
		if _, ok := helm4Installed(c.text); ok || helm4SkipsHook(c.text) {
			return true
		}
	}
	return false
}
