package postrenderer

import (
	"bytes"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/annotations"
)

// postrenderFilename is the annotation in which Helm 4 records each
// document's template file before its post-renderer runs: a document that
// has it comes from Helm 4.
const postrenderFilename = "postrenderer.helm.sh/postrender-filename"

// changingBlock finds the header of a block scalar whose value Helm 4 can
// change when it writes the document anew: a folded one (>) or a literal one
// that keeps its final line breaks (|+, |2+, |+2).
var changingBlock = regexp.MustCompile(`(?m)[ \t](>[-+1-9]{0,2}|\|[1-9]?\+|\|\+[1-9])[ \t]*(#.*)?\r?$`)

// fromHelm4 reports whether text, a document, holds Helm 4's annotation:
// Helm 4 wrote it for its post-renderer.
func fromHelm4(text []byte) bool { return bytes.Contains(text, []byte(postrenderFilename+":")) }

// helm4Filename returns the template file Helm 4's annotation in text, a
// document from Helm 4, names: the value after the first
// "postrenderer.helm.sh/postrender-filename:" on a line, read as YAML; ""
// when no line has it or its value is not a string. It names the
// document's file where Helm 4 sends no "# Source:" comment.
func helm4Filename(text []byte) string {
	for line := range bytes.Lines(text) {
		_, value, ok := bytes.Cut(line, []byte(postrenderFilename+":"))
		if !ok {
			continue
		}
		// The usual value, written by yaml.v3 in single quotes, is read
		// without a YAML parser (this runs for every document Helm 4
		// sends); any other goes through one.
		value = bytes.TrimSpace(value)
		if inner, ok := bytes.CutPrefix(value, []byte("'")); ok {
			if inner, ok := bytes.CutSuffix(inner, []byte("'")); ok && !bytes.Contains(inner, []byte("'")) {
				return string(inner)
			}
		}
		var name string
		if yaml.Unmarshal(value, &name) != nil {
			return ""
		}
		return name
	}
	return ""
}

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
	if !fromHelm4(text) || !changingBlock.Match(text) && bytes.IndexByte(text, '&') < 0 {
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
	if _, hook := nodes[0].GetAnnotations()[annotations.HelmHook]; !hook {
		written += "\n"
	}
	return []byte(written), true
}

// helm4SkipsHook reports whether a document of Helm 4's stream is a
// ConfigMap or Secret hook that Helm does not create on install and on
// upgrade alike: one made on install only (a generated password, say), on
// upgrade only, or on other events (test, delete, rollback). Helm 4 sends
// every hook to its post-renderer, but an upgrade applies only its upgrade
// hooks, so such a config's rendered content is not what the cluster holds
// after each install and upgrade: hashing it would roll its consumers on an
// upgrade that changed nothing (a password rendered anew and never applied)
// or when nothing they read changed. It is read as Helm 3 reads every hook,
// which it never sends: as a config the release does not hold, recorded in
// confighash.dev/external of the workloads that consume it. A plain stream
// (helm template piped into confighash, applied by kubectl or Argo CD,
// which create every document they are given) is read as it is.
func helm4SkipsHook(text []byte) bool {
	if !bytes.Contains(text, []byte(annotations.HelmHook)) || !bytes.Contains(text, []byte(postrenderFilename+":")) {
		return false
	}
	nodes, err := kio.ParseAll(string(text))
	if err != nil || len(nodes) != 1 {
		return false // reading the text as it is reports the error
	}
	if k := nodes[0].GetKind(); nodes[0].GetApiVersion() != "v1" || k != "ConfigMap" && k != "Secret" {
		return false
	}
	events, hook := nodes[0].GetAnnotations()[annotations.HelmHook]
	return hook && !onInstallAndUpgrade(events)
}

// onInstallAndUpgrade reports whether Helm creates a hook with these events
// (the value of helm.sh/hook) on install and on upgrade, reading the value
// as Helm 4's manifest sorter does: comma-separated, case and spaces
// ignored; a hook with an event it does not know is never created.
func onInstallAndUpgrade(events string) bool {
	var install, upgrade bool
	for e := range strings.SplitSeq(events, ",") {
		switch strings.ToLower(strings.TrimSpace(e)) {
		case "pre-install", "post-install":
			install = true
		case "pre-upgrade", "post-upgrade":
			upgrade = true
		case "pre-delete", "post-delete", "pre-rollback", "post-rollback", "test", "test-success":
		default:
			return false
		}
	}
	return install && upgrade
}
