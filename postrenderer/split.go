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
	for pos < len(input) {
		end := bytes.IndexByte(input[pos:], '\n')
		next := len(input)
		if end >= 0 {
			next = pos + end + 1
		}
		line := input[pos:next]
		if isMarker(line, "---") && pos > start {
			docs = append(docs, document{text: input[start:pos], offset: start})
			start = pos
		}
		pos = next
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
func hasContent(chunk []byte) bool {
	for len(chunk) > 0 {
		line := chunk
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			line, chunk = chunk[:i], chunk[i+1:]
		} else {
			chunk = nil
		}
		if isMarker(line, "---") || isMarker(line, "...") {
			line = line[3:] // "--- {a: b}" starts a document on the marker line
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		return true
	}
	return false
}
