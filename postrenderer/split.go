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
		if isMarker(input[line:], "---") && line > start {
			docs = append(docs, document{text: input[start:line], offset: start})
			start = line
		}
	}
	if start < len(input) || len(docs) == 0 {
		docs = append(docs, document{text: input[start:], offset: start})
	}
	return docs
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
	var value []byte
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		if isMarker(line, "---") {
			line = line[3:]
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		if value != nil {
			return false // a second line of content
		}
		if i := bytes.Index(t, []byte(" #")); i >= 0 {
			t = bytes.TrimSpace(t[:i])
		}
		value = t
	}
	switch string(value) {
	case "null", "Null", "NULL", "~":
		return true
	}
	return false
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
		if isMarker(line, "---") || isMarker(line, "...") {
			line = line[3:]
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			return line
		}
	}
	return nil
}
