package yamlnode

import (
	"bytes"
	"regexp"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
)

// A document of a stream is parsed on its own, so yaml.v3 counts its lines
// from the document's first line. The tools name lines of the file, which a
// user opens in an editor: ShiftLines and ShiftErrorLine move a document's
// lines by the lines of the stream before it.

// LineOf returns the line (counted from 1) on which byte offset of input
// starts.
func LineOf(input []byte, offset int) int {
	return bytes.Count(input[:offset], []byte{'\n'}) + 1
}

// ShiftLines adds by to the line of n and of every node below it. Aliases
// are not followed: what they refer to is in the tree.
func ShiftLines(n *yaml.Node, by int) {
	if n == nil || by == 0 {
		return
	}
	n.Line += by
	for _, c := range n.Content {
		ShiftLines(c, by)
	}
}

// errorLine is the line yaml.v3 and ParseError write into an error.
var errorLine = regexp.MustCompile(`\bline (\d+):`)

// ShiftErrorLine returns err with the first "line N:" of its message moved
// by by lines (err itself when it names no line or by is 0). The error is
// rewritten to its message: it wraps nothing a caller tests for.
func ShiftErrorLine(err error, by int) error {
	if err == nil || by == 0 {
		return err
	}
	msg := err.Error()
	loc := errorLine.FindStringSubmatchIndex(msg)
	if loc == nil {
		return err
	}
	n, convErr := strconv.Atoi(msg[loc[2]:loc[3]])
	if convErr != nil {
		return err
	}
	return lineError(msg[:loc[2]] + strconv.Itoa(n+by) + msg[loc[3]:])
}

type lineError string

func (e lineError) Error() string { return string(e) }
