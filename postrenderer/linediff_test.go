package postrenderer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// lineRules say which lines a difference between an input and the output
// may touch.
type lineRules struct {
	// added accepts a line only in the output.
	added func(line string) bool
	// removed accepts a line only in the input.
	removed func(line string) bool
	// grown, when set, accepts an input line that became the output line in
	// place (a flow mapping that gained an entry, say).
	grown func(in, out string) bool
}

// foreignDifference walks in and out line by line and describes the first
// difference the rules do not accept; "" when there is none. An added line
// next to a removed one is a changed value.
func foreignDifference(in, out string, rules lineRules) string {
	a, b := strings.Split(in, "\n"), strings.Split(out, "\n")
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case i < len(a) && j < len(b) && rules.grown != nil && rules.grown(a[i], b[j]):
			i, j = i+1, j+1
		case j < len(b) && rules.added(b[j]):
			if i < len(a) && rules.removed(a[i]) {
				i++
			}
			j++
		case i < len(a) && rules.removed(a[i]):
			i++
		default:
			return fmt.Sprintf("at input line %d / output line %d:\n< %q\n> %q", i+1, j+1, at(a, i), at(b, j))
		}
	}
	return ""
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<end>"
}

// TestForeignDifference: the walk accepts what the rules accept, wherever
// it stands, and names the first line they do not.
func TestForeignDifference(t *testing.T) {
	ours := lineRules{
		added:   func(l string) bool { return strings.Contains(l, "ours") },
		removed: func(l string) bool { return strings.Contains(l, "old ours") },
		grown: func(in, out string) bool {
			return strings.HasPrefix(out, in) && strings.Contains(out[len(in):], "ours")
		},
	}
	for _, tc := range []struct {
		name, in, out, want string
	}{
		{"the same", "a\nb\n", "a\nb\n", ""},
		{"a line added", "a\nb\n", "a\nours\nb\n", ""},
		{"a line added at the end", "a\nb", "a\nb\nours", ""},
		{"a line removed", "a\nold ours\nb\n", "a\nb\n", ""},
		{"a value changed", "a\nold ours\nb\n", "a\nnew ours\nb\n", ""},
		{"a line grown", "a {x}\nb\n", "a {x} ours\nb\n", ""},
		{"another line changed", "a\nb\n", "a\nc\n", "input line 2 / output line 2:\n< \"b\"\n> \"c\""},
		{"another line added", "a\nb\n", "a\nb\nc\n", "input line 3 / output line 3:\n< \"\"\n> \"c\""},
		{"another line removed", "a\nb\nc", "a\nc", "input line 2 / output line 2:\n< \"b\"\n> \"c\""},
		{"lines swapped", "a\nb\n", "b\na\n", "input line 1 / output line 1"},
		{"the output cut short", "a\nb", "a", "input line 2 / output line 2:\n< \"b\"\n> \"<end>\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := foreignDifference(tc.in, tc.out, ours)
			if tc.want == "" {
				assert.Empty(t, got)
			} else {
				assert.Contains(t, got, tc.want)
			}
		})
	}
}
