package postrenderer

import (
	"bytes"
	"regexp"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// postrenderFilename is the annotation in which Helm 4 records each
// document's template file before its post-renderer runs: a document that
// has it comes from Helm 4.
const postrenderFilename = "postrenderer.helm.sh/postrender-filename"

// changingBlock finds the header of a block scalar whose value Helm 4 can
// change when it writes the document anew: a folded one (>) or a literal one
// that keeps its final line breaks (|+, |2+, |+2).
var changingBlock = regexp.MustCompile(`(?m)[ \t](>[-+1-9]{0,2}|\|[1-9]?\+|\|\+[1-9])[ \t]*(#.*)?\r?$`)

// helm4Installed returns the text of a ConfigMap or Secret from Helm 4's
// stream as Helm 4 will install it, when that can differ from the text it
// sent. Helm 4 reads its post-renderer's output with kyaml and writes each
// document anew (kio.ParseAll, kio.StringAll, the kyaml and yaml.v3 versions
// of this module), then joins the documents into its release manifest with a
// line feed after each; a hook is created from its own text, without that
// line feed. yaml.v3 does not write every folded block back as it read it
// (a line that starts with a tab or a space gains blank lines before it),
// nor a block that keeps its final line breaks (|+, >+) when a comment
// follows it, and the line feed at the end of the document is one more
// blank line for such a block there. .Files.Glob's AsConfig writes such a
// block for a file that ends in a blank line. Any other document reads the
// same either way.
//
// Helm 4 also adds its annotation to the document's annotations before its
// post-renderer runs and removes it from there afterwards; when that map
// has an anchor, a merge key or an alias elsewhere in the document (data
// that merges the annotations, say) holds the annotation in the text sent
// but not in what Helm 4 stores. So a document with an anchor is read as
// Helm 4 stores it too.
func helm4Installed(text []byte) ([]byte, bool) {
	if !bytes.Contains(text, []byte(postrenderFilename+":")) || !changingBlock.Match(text) && bytes.IndexByte(text, '&') < 0 {
		return nil, false
	}
	nodes, err := kio.ParseAll(string(text))
	if err != nil || len(nodes) != 1 {
		return nil, false // reading the text as it is reports the error
	}
	if k := nodes[0].GetKind(); nodes[0].GetApiVersion() != "v1" || k != "ConfigMap" && k != "Secret" {
		return nil, false // a workload is edited in place: its text stays
	}
	if err := nodes[0].PipeE(yaml.ClearAnnotation(postrenderFilename)); err != nil {
		return nil, false
	}
	written, err := kio.StringAll(nodes)
	if err != nil {
		return nil, false
	}
	// Helm sorts out as hooks the documents with this annotation, whatever
	// its value.
	if _, hook := nodes[0].GetAnnotations()["helm.sh/hook"]; !hook {
		written += "\n"
	}
	return []byte(written), true
}
