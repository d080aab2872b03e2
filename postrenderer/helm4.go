package postrenderer

import (
	"bytes"
	"slices"
)

// postrenderFilename is the annotation in which Helm 4 records each
// document's template file before its post-renderer runs.
const postrenderFilename = "postrenderer.helm.sh/postrender-filename"

// helm4Installed returns the text of chunk i as Helm 4 will install it, when
// that differs from what Helm 4 sent. Helm 4 writes the post-renderer's
// documents back into their template files, cuts each file into documents
// again and joins those into the release manifest with a line feed after
// each; a file's last document keeps the line feeds it ends with, so it is
// installed with one more. That changes what it reads only when it ends in
// a block scalar that keeps its blank lines (|+, which Helm 4's encoder
// writes for a value ending in a blank line, as .Files.Glob's AsConfig
// writes a file ending in one), and such a text ends in a blank line. A
// hook is created from its own text, without the extra line feed.
func helm4Installed(chunks []document, i int, text []byte) ([]byte, bool) {
	if !bytes.HasSuffix(text, []byte("\n\n")) {
		return nil, false
	}
	file := postrenderFile(text)
	if file == nil || !lastOfFile(chunks, i, file) || isHook(text) {
		return nil, false
	}
	return append(slices.Clip(text), '\n'), true
}

// lastOfFile reports whether no document after chunk i comes from file.
// Helm 4 sends the documents of a file one after another.
func lastOfFile(chunks []document, i int, file []byte) bool {
	for _, c := range chunks[i+1:] {
		if hasContent(c.text) && !isNullDocument(c.text) {
			return !bytes.Equal(postrenderFile(c.text), file)
		}
	}
	return true
}

// postrenderFile returns the value of a document's postrender-filename
// annotation as written (quotes included), or nil when it has none.
func postrenderFile(text []byte) []byte {
	_, rest, ok := bytes.Cut(text, []byte(postrenderFilename+":"))
	if !ok {
		return nil
	}
	rest = bytes.TrimLeft(rest, " ")
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	if len(rest) > 0 && (rest[0] == '\'' || rest[0] == '"') {
		for i := 1; i < len(rest); i++ {
			switch {
			case rest[i] == '\\' && rest[0] == '"':
				i++
			case rest[i] == '\'' && i+1 < len(rest) && rest[i+1] == '\'':
				i++
			case rest[i] == rest[0]:
				return rest[:i+1]
			}
		}
		return rest
	}
	if i := bytes.IndexAny(rest, ",}#"); i >= 0 {
		rest = rest[:i]
	}
	return bytes.TrimSpace(rest)
}

// isHook reports whether a document is a Helm hook: it has the annotation
// helm.sh/hook, whatever its value, as Helm sorts hooks out. A document that
// does not parse is no hook here; reading it reports the error.
func isHook(text []byte) bool {
	n, err := parseRaw(text)
	if err != nil {
		return false
	}
	_, ok := n.GetAnnotations()["helm.sh/hook"]
	return ok
}
