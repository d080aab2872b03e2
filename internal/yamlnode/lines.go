package yamlnode

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"

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

// errorLine is a line, or a pair of lines, that yaml.v3, yamlnorm and the
// readers write into an error: "line 3:", "lines 3 and 5".
var errorLine = regexp.MustCompile(`\bline (\d+):|\blines (\d+) and (\d+)\b`)

// ShiftErrorLine returns err with the first line (or pair of lines) its
// message names moved by by lines, err itself when it names none or by is
// 0. An error of this package that names two lines (a syntax error next to
// a line break an editor does not show) has both moved. The error is
// rewritten to its message: it wraps nothing a caller tests for.
func ShiftErrorLine(err error, by int) error {
	if err == nil || by == 0 {
		return err
	}
	if s, ok := err.(interface{ shiftLines(by int) error }); ok {
		return s.shiftLines(by)
	}
	msg := err.Error()
	loc := errorLine.FindStringSubmatchIndex(msg)
	if loc == nil {
		return err
	}
	var b strings.Builder
	last := 0
	for g := 1; g < len(loc)/2; g++ {
		start, end := loc[2*g], loc[2*g+1]
		if start < 0 {
			continue
		}
		n, convErr := strconv.Atoi(msg[start:end])
		if convErr != nil {
			return err
		}
		b.WriteString(msg[last:start])
		b.WriteString(strconv.Itoa(n + by))
		last = end
	}
	b.WriteString(msg[last:])
	return lineError(b.String())
}

type lineError string

func (e lineError) Error() string { return string(e) }
