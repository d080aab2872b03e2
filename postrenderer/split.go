package postrenderer

import "bytes"

// document is one document of the stream: its bytes, including its leading
// separator line and comments, and where it starts in the input.
type document struct {
	text   []byte
	offset int
}

// split cuts input into chunks at "---" lines, keeping every byte:
// concatenating the texts gives the input back. A chunk may hold only
// comments; the caller skips those.
func split(input []byte) []document {
	var docs []document
	start, pos := 0, 0
	marker := []byte("\n---")
	for {
		i := bytes.Index(input[pos:], marker)
		if i < 0 {
			break
		}
		line := pos + i + 1 // the start of a line that begins with "---"
		pos = line + 3
		if isSeparator(input[line:]) && line > start {
			docs = append(docs, document{text: input[start:line], offset: start})
			start = line
		}
	}
	if start < len(input) || len(docs) == 0 {
		docs = append(docs, document{text: input[start:], offset: start})
	}
	return docs
}

// isSeparator reports whether a line separates documents as kubectl and
// kustomize split a stream: "---" alone or followed by white space or a
// comment, the comment written right after it ("---#c") included, which
// yaml.v3 would read as text (see gluedComment).
func isSeparator(line []byte) bool {
	return isMarker(line, "---") || bytes.HasPrefix(line, []byte("---#"))
}

// gluedComment reports whether a chunk opens with a separator line whose
// comment follows "---" without white space.
func gluedComment(text []byte) bool { return bytes.HasPrefix(text, []byte("---#")) }

// markerText returns the number of the first line of a chunk (counted from
// 1) that starts with "---" but is no separator: text other than a comment
// follows the marker ("--- !!map", "--- {a: b}", "---x"). kubectl and
// kustomize refuse such a line; yaml.v3 reads some of them. 0 if none.
func markerText(text []byte) int {
	pos := 0
	for {
		if bytes.HasPrefix(text[pos:], []byte("---")) {
			end := len(text)
			if i := bytes.IndexByte(text[pos:], '\n'); i >= 0 {
				end = pos + i
			}
			if rest := bytes.TrimSpace(text[pos+3 : end]); len(rest) > 0 && rest[0] != '#' {
				return bytes.Count(text[:pos], []byte{'\n'}) + 1
			}
		}
		i := bytes.Index(text[pos:], []byte("\n---"))
		if i < 0 {
			return 0
		}
		pos += i + 1
	}
}

// isMarker reports whether line is the document marker m, alone or followed
// by white space or a comment.
func isMarker(line []byte, m string) bool {
	if !bytes.HasPrefix(line, []byte(m)) {
		return false
	}
	rest := line[len(m):]
	return len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r'
}

// hasContent reports whether a chunk holds anything but separators,
// comments and blank lines.
func hasContent(chunk []byte) bool { return firstContent(chunk) != nil }

// isNullDocument reports whether a chunk's document is only a YAML null
// (null, Null, NULL or ~, with comments around it). kubectl, Helm and kyaml
// skip such a document as they skip an empty one: a template that renders
// {{ toYaml .Values.notSet }} gives one.
func isNullDocument(text []byte) bool {
	line := firstContent(text)
	v := bytes.TrimSpace(line)
	if i := bytes.Index(v, []byte(" #")); i >= 0 {
		v = bytes.TrimSpace(v[:i])
	}
	switch string(v) {
	case "null", "Null", "NULL", "~":
	default:
		return false // most documents: their first line is a key
	}
	// line is a slice of text: nothing but comments may follow it.
	end := cap(text) - cap(line) + len(line)
	return firstContent(text[end:]) == nil
}

// firstContent returns the first line of text that holds anything but a
// document marker, a comment or blanks, without a marker at its start
// ("--- {a: b}" starts a document on the marker line); nil if there is none.
func firstContent(text []byte) []byte {
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		if isSeparator(line) || isMarker(line, "...") {
			line = line[3:]
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			return line
		}
	}
	return nil
}
