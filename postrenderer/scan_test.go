package postrenderer

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// The skip path's scanners work a word or a marker at a time; these tests
// hold each to the plain byte-by-byte or line-by-line rule it stands for.

// scanTextByByte is scanText's rule, one byte at a time.
func scanTextByByte(text []byte) ([]int, bool) {
	if !utf8.Valid(text) {
		return nil, false
	}
	var starts []int
	for i, b := range text {
		switch {
		case b == '\t':
			if i == 0 || text[i-1] == '\n' {
				return nil, false
			}
		case b < 0x20 && b != '\n' && b != '\r', b == 0x7f:
			return nil, false
		}
		if (i == 0 || text[i-1] == '\n') && b != ' ' && b != '\n' {
			starts = append(starts, i)
		}
	}
	return starts, true
}

// yamlText is scanText's verdict alone.
func yamlText(text []byte) bool {
	_, ok := scanText(text, nil)
	return ok
}

// yamlTextByByte is scanTextByByte's verdict alone.
func yamlTextByByte(text []byte) bool {
	_, ok := scanTextByByte(text)
	return ok
}

// splitByLine is split's rule, one line at a time.
func splitByLine(input []byte) []document {
	var docs []document
	start, pos := 0, 0
	for pos < len(input) {
		next := len(input)
		if end := bytes.IndexByte(input[pos:], '\n'); end >= 0 {
			next = pos + end + 1
		}
		if isSeparator(input[pos:next]) && pos > start {
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

func TestYAMLText(t *testing.T) {
	long := strings.Repeat("spec:\n  description: a long line of text\n", 4)
	cases := []struct {
		name, text string
		ok         bool
	}{
		{"empty", "", true},
		{"short", "a: b\n", true},
		{"long", long, true},
		{"tab inside a line", long + "a:\tb\n", true},
		{"CRLF", strings.ReplaceAll(long, "\n", "\r\n"), true},
		{"tab at a line start", long + "\tb: c\n" + long, false},
		{"tab at the start", "\ta: b\n" + long, false},
		{"tab at a word's first byte", "1234567\n\tb: c\n", false},
		{"control character in the first word", "a: \x01" + long, false},
		{"control character at a word's last byte", "abcdefg\x02" + long, false},
		{"control character in the tail", long + "ab\x1f", false},
		{"DEL", long + "a: \x7f b\n", false},
		{"NUL", long + "a: \x00\n", false},
		{"UTF-8 text", long + "a: ünïcødé ✓\n", true},
		{"not UTF-8", long + "a: \xff\n", false},
		{"bytes above 0x7f next to ones below", long + "a: é\x01\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.ok, yamlText([]byte(tc.text)))
			assert.Equal(t, tc.ok, yamlTextByByte([]byte(tc.text)), "the case itself")
		})
	}
}

func TestScanTextLineStarts(t *testing.T) {
	cases := []struct {
		text   string
		starts []int
	}{
		{"", nil},
		{"a: b\n", []int{0}},
		{" a\nb\n\n  c\nd", []int{3, 10}},
		{"apiVersion: v1\r\n\r\nkind: Service\r\n", []int{0, 16, 18}},
		{"abcdefg\nhijklmn\nopqrstu\n", []int{0, 8, 16}},
	}
	for _, tc := range cases {
		starts, ok := scanText([]byte(tc.text), nil)
		assert.True(t, ok, "%q", tc.text)
		assert.Equal(t, tc.starts, starts, "%q", tc.text)
	}
}

func FuzzScanText(f *testing.F) {
	for _, s := range []string{"", "a: b\n", "abcdefg\n\tb\n", "x\x7fyyyyyyyyy", "ü\x01\x02\x03\x04\x05\x06\x07\x08\x09", "a\n b\nc\r\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		got, ok := scanText(text, nil)
		want, wantOK := scanTextByByte(text)
		if ok != wantOK {
			t.Fatalf("scanText(%q): %v, byte by byte %v", text, ok, wantOK)
		}
		if ok && !slices.Equal(got, want) {
			t.Fatalf("scanText(%q): line starts %v, byte by byte %v", text, got, want)
		}
	})
}

func TestSplitMatchesLines(t *testing.T) {
	for _, s := range []string{
		"", "---", "---\n", "a: b\n", "---\na: b\n---\nc: d\n", "a: b\n---\r\nc: d\r\n",
		"a: b\n--- # c\nc: d\n---\t\ne: f", "a: b\n----\nc: d\n", "a: |\n  ---\nb: c\n---x\n",
		"a\n---\n---\n---\n", "---\n---", "\n---", "a: b\n---#c\nc: d\n", "---#\n",
	} {
		assert.Equal(t, splitByLine([]byte(s)), split([]byte(s)), "%q", s)
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"---\na: b\n---\nc: d\n", "a\n--- x\n---\r\n", "\n---"} {
		f.Add([]byte(s))
	}
	// Layouts of the shared corpus: Helm's "---\n# Source:" headers, a
	// literal block whose text holds "---" indented, a document of
	// comments only, a stream that ends without a newline.
	for _, s := range []string{
		"---\n# Source: promtail/templates/secret.yaml\napiVersion: v1\nkind: Secret\n---\n# Source: promtail/templates/configmap.yaml\nkind: ConfigMap\n",
		"kind: ConfigMap\ndata:\n  a.yaml: |\n    ---\n    b: c\n    ---\n---\nkind: Secret\n",
		"# only a comment\n---\n---\n# another\n",
		"apiVersion: v1\nkind: List\nitems: []",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		got, want := split(input), splitByLine(input)
		if len(got) != len(want) {
			t.Fatalf("split(%q): %d documents, line by line %d", input, len(got), len(want))
		}
		for i := range got {
			if got[i].offset != want[i].offset || !bytes.Equal(got[i].text, want[i].text) {
				t.Fatalf("split(%q): document %d differs", input, i)
			}
		}
	})
}
