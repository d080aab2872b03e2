package postrenderer

import (
	"bytes"
	"errors"
	"io"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/yamlnode"
	"github.com/confighash/confighash/internal/yamlnorm"
)

// parseBatch reads many documents with one yaml.v3 decoder instead of one
// parser per document: a parser's buffers, token queue and indentation stacks
// are then allocated once for the whole stream rather than once per document,
// which is a large share of what parsing thousands of small documents
// allocates.
//
// Only documents that read the same in a stream as on their own are batched:
// each must start with its own "---" line and hold no anchor (yaml.v3 keeps
// anchors from one document to the next), no directive and no "..." line.
// The rest, and every document of a batch that fails or does not come back
// one-for-one, are parsed on their own, so errors name the document exactly
// as parse does. Node lines are made relative to each document's text.
//
// Comments are the one thing that may differ: in a stream yaml.v3 can attach
// a comment that opens a document (one followed by a blank line, say) to the
// document before it. Nothing reads comments but re-encoding, which parses
// its document on its own (reencode).
//
// Every node is then normalised (yamlnorm): anchors, aliases and merge keys
// expanded as the API server's YAML reader expands them, keys written twice
// and alias bombs refused. The results say which nodes are no longer where
// the text has them.
func parseBatch(texts [][]byte) ([]*yaml.RNode, []*yamlnorm.Result, []error) {
	nodes := make([]*yaml.RNode, len(texts))
	norms := make([]*yamlnorm.Result, len(texts))
	errs := make([]error, len(texts))
	var batch []int
	var startLine []int
	size := 0
	for i, t := range texts {
		if batchable(t) {
			batch = append(batch, i)
			size += len(t) + 1
		}
	}
	if len(batch) > 1 {
		joined := make([]byte, 0, size)
		startLine = make([]int, len(batch))
		lines := 0
		for j, i := range batch {
			startLine[j] = lines
			joined = append(joined, texts[i]...)
			lines += bytes.Count(texts[i], []byte{'\n'})
		}
		if decoded, ok := decodeAll(joined, len(batch)); ok {
			for j, i := range batch {
				shiftLines(decoded[j], startLine[j])
				nodes[i] = yaml.NewRNode(decoded[j])
			}
		}
	}
	for i, t := range texts {
		if nodes[i] == nil {
			nodes[i], errs[i] = parseRaw(t)
		}
		if errs[i] == nil {
			norms[i], errs[i] = yamlnorm.Normalise(nodes[i].YNode())
		}
	}
	return nodes, norms, errs
}

// editable checks that a workload's annotations can be written in place:
// neither the workload's nor its pod template's metadata (nor the template
// itself) comes from an alias, a merge key, or an anchor repeated elsewhere,
// where an edit of the text would change more than this one object.
func editable(norm *yamlnorm.Result, w inject.Workload, opts inject.Options) error {
	hashOn, externalOn := w.Holders(opts)
	if norm == nil || externalOn == nil {
		return nil
	}
	on := []*yaml.Node{externalOn.YNode()}
	if w.Template != nil {
		on = append(on, w.Template.YNode())
	} else if hashOn != nil {
		on = append(on, hashOn.YNode())
	}
	for _, n := range on {
		meta := yamlnode.Child(n, "metadata")
		ann := yamlnode.Child(meta, "annotations")
		nodes := []*yaml.Node{n, meta, ann}
		if ann != nil {
			nodes = append(nodes, ann.Content...)
		}
		if !norm.Editable(nodes...) {
			return errors.New("the pod template's metadata (or the object's) comes from a YAML alias, merge key or repeated anchor: writing the annotation there would change every use of the anchor; write that metadata out in place")
		}
	}
	return nil
}

// decodeAll decodes exactly n documents from text, or reports failure.
func decodeAll(text []byte, n int) ([]*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	out := make([]*yaml.Node, 0, n)
	docs := make([]yaml.Node, n)
	for len(out) < n {
		doc := &docs[len(out)]
		if err := dec.Decode(doc); err != nil {
			return nil, false
		}
		if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
			return nil, false
		}
		out = append(out, doc.Content[0])
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return out, true
}

// batchable reports whether a document reads the same inside a stream as on
// its own: it opens with a "---" line (so the previous document cannot run
// into it), and holds no anchor, directive or document-end line.
func batchable(text []byte) bool {
	if !bytes.HasPrefix(text, []byte("---")) || !isMarker(firstLine(text), "---") {
		return false
	}
	// The lines of a batch are counted by "\n" (startLine), the parser's
	// by every break it knows.
	if bytes.IndexByte(text, '&') >= 0 || bytes.IndexByte(text, '\r') >= 0 || yamlnode.HasUnicodeBreak(text) {
		return false
	}
	// A document that does not end with a line break (the last of a stream)
	// is parsed alone: one added before the next would become part of a
	// block scalar at its end ("|\n  x" is "x" at the end of the input,
	// "x\n" before more).
	if text[len(text)-1] != '\n' {
		return false
	}
	return !bytes.Contains(text, []byte("\n%")) && !bytes.Contains(text, []byte("\n..."))
}

func firstLine(text []byte) []byte {
	if i := bytes.IndexByte(text, '\n'); i >= 0 {
		return text[:i+1]
	}
	return text
}

// shiftLines makes a node tree's line numbers relative to a document that
// starts after the given number of lines.
func shiftLines(n *yaml.Node, by int) {
	if by == 0 {
		return
	}
	n.Line -= by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}
