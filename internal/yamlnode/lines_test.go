package yamlnode_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/confighash/confighash/internal/yamlnode"
)

// TestShiftLines: a document parsed on its own, its lines shifted by the
// lines before it, has the lines of the same document parsed in its stream.
func TestShiftLines(t *testing.T) {
	const before = "a: 1\n---\n"
	const doc = "b:\n  c: [x, y]\n  d: &d {e: f}\n  g: *d\n"
	var alone, stream yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(doc), &alone))
	dec := yaml.NewDecoder(strings.NewReader(before + doc))
	var first yaml.Node
	require.NoError(t, dec.Decode(&first))
	require.NoError(t, dec.Decode(&stream))
	yamlnode.ShiftLines(&alone, yamlnode.LineOf([]byte(before+doc), len(before))-1)
	var lines func(a, b *yaml.Node)
	lines = func(a, b *yaml.Node) {
		assert.Equal(t, b.Line, a.Line, "%q", a.Value)
		require.Len(t, a.Content, len(b.Content))
		for i := range a.Content {
			lines(a.Content[i], b.Content[i])
		}
	}
	// The document nodes differ: in the stream, one starts at its "---" line.
	lines(alone.Content[0], stream.Content[0])
}

// TestShiftErrorLine: the lines of yaml.v3's syntax errors (ParseError)
// move; an error that holds no LineError is left as it is, whatever its
// text reads like.
func TestShiftErrorLine(t *testing.T) {
	var doc yaml.Node
	parseErr := yamlnode.ParseError([]byte("a: [1, 2\nb: 3\n"), yaml.Unmarshal([]byte("a: [1, 2\nb: 3\n"), &doc))
	require.Error(t, parseErr)
	assert.Equal(t, strings.Replace(parseErr.Error(), "line 2:", "line 5:", 1), yamlnode.ShiftErrorLine(parseErr, 3).Error())
	for _, msg := range []string{
		`data.line 3:: not valid base64`,
		`key "x" appears twice (lines 7 and 8)`,
		"no line here",
	} {
		assert.Equal(t, msg, yamlnode.ShiftErrorLine(errors.New(msg), 4).Error())
	}
	assert.Equal(t, "yaml: line 2: x", yamlnode.ShiftErrorLine(errors.New("yaml: line 2: x"), 0).Error())
	assert.NoError(t, yamlnode.ShiftErrorLine(nil, 3))
}

// TestLineErrorMoves: the lines of a LineError move as numbers, through
// the errors that wrap it, and never the text around them, which may
// quote a key that reads like a line.
func TestLineErrorMoves(t *testing.T) {
	cause := errors.New("the cause")
	tests := []struct {
		name string
		err  error
		by   int
		want string
	}{
		{"one line", yamlnode.AtLine(3, cause), 4, "line 7: the cause"},
		{"wrapped, the wrapper's text quoting a line", fmt.Errorf(`key "line 3:": %w`, yamlnode.AtLine(3, cause)), 4, `key "line 3:": line 7: the cause`},
		{"two node lines, the text quoting a line", yamlnode.AtNodeLines(`key "line 3:" appears twice`, 8, 9, ""), 10, `key "line 3:" appears twice (lines 18 and 19)`},
		{"a node line, wrapped twice", fmt.Errorf("document 1: %w", fmt.Errorf("data: %w", yamlnode.AtNodeLine(2, "lines 5 and 6: a value"))), 1, "document 1: data: line 3: lines 5 and 6: a value"},
		{"text after the wrapped error", fmt.Errorf("[%w] (lines 1 and 2)", yamlnode.AtLine(5, cause)), 1, "[line 6: the cause] (lines 1 and 2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			moved := yamlnode.ShiftErrorLine(tt.err, tt.by)
			assert.Equal(t, tt.want, moved.Error())
			// Moved again: the result is itself a LineError.
			assert.Equal(t, yamlnode.ShiftErrorLine(tt.err, tt.by+2).Error(), yamlnode.ShiftErrorLine(moved, 2).Error())
			if errors.Is(tt.err, cause) {
				assert.ErrorIs(t, moved, cause)
			}
		})
	}
}

// TestEditorLines: lines a yaml.v3 node holds, which count a NEL, LS, PS
// and a lone carriage return as line breaks, become the lines an editor
// shows; lines already an editor's, and text without such a break, stay.
func TestEditorLines(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		// marker is the key whose line the node holds.
		marker string
		want   int
	}{
		{"line feeds only", "a: 1\nb: 2\nc: 3\n", "c", 3},
		{"CRLF", "a: 1\r\nb: 2\r\nc: 3\r\n", "c", 3},
		{"a quoted LINE SEPARATOR", "a: \"x\u2028y\"\nb: 2\nc: 3\n", "c", 3},
		{"a quoted NEL and PARAGRAPH SEPARATOR", "a: \"x\u0085y\u2029z\"\nc: 3\n", "c", 2},
		{"a quoted lone carriage return", "a: \"x\ry\"\r\nc: 3\n", "c", 2},
		{"a break between two comments", "# x\u2028# y\nc: 3\n", "c", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			require.NoError(t, yaml.Unmarshal([]byte(tc.text), &doc))
			key := doc.Content[0].Content[len(doc.Content[0].Content)-2]
			require.Equal(t, tc.marker, key.Value)

			err := fmt.Errorf("document 2: %w", yamlnode.AtNodeLine(key.Line, "a problem"))
			mapped := yamlnode.EditorLines([]byte(tc.text), err)
			assert.Equal(t, fmt.Sprintf("document 2: line %d: a problem", tc.want), mapped.Error())
			// Shifted after: the stream's line.
			assert.Equal(t, fmt.Sprintf("document 2: line %d: a problem", tc.want+5), yamlnode.ShiftErrorLine(mapped, 5).Error())
			// A line already an editor's is left as it is.
			editor := yamlnode.AtLine(key.Line, errors.New("a problem"))
			assert.Equal(t, editor.Error(), yamlnode.EditorLines([]byte(tc.text), editor).Error())

			yamlnode.EditorNodeLines(&doc, []byte(tc.text))
			assert.Equal(t, tc.want, key.Line, "the tree")
		})
	}
}

// TestLoneCRDocument: text cut at line feeds (as kubectl, Helm and
// kustomize cut a stream) that YAML reads as two documents, since a
// carriage return alone ends a marker line, is refused at the line YAML
// gives the second document's start; other carriage returns are not.
func TestLoneCRDocument(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line       int // 0: no error
	}{
		{"line feeds", "a: 1\n---\nb: 2\n", 0},
		{"CRLF", "a: 1\r\nb: 2\r\n", 0},
		{"one document of carriage returns", "a: 1\rb: 2\r", 0},
		{"a carriage return in a quoted value", "a: \"x\ry\"\nb: 2\n", 0},
		{"a marker that ends the text", "a: 1\r---\r", 0},
		{"a marker and a comment after it", "a: 1\r---\r# only a comment\r", 0},
		{"two documents", "a: 1\r  # c\rb: 2\r---\r\rc: 3\r", 4},
		{"a marker between line feeds and a carriage return", "a: 1\nb: 2\r--- \rc: 3\n", 3},
		{"after an end marker", "a: 1\r...\rc: 3\r", 3},
		{"YAML that does not parse", "a: [\r---\rb: 2\r", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := yamlnode.LoneCRDocument([]byte(tc.text))
			if tc.line == 0 {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("more YAML at line %d (counting each carriage return", tc.line))
			assert.Contains(t, err.Error(), "drop the rest")
		})
	}
}

// TestCopyLines: a tree read from another text of the same content (kio's
// cut of a ResourceList, an expanded text) takes the lines of the tree
// read from the input, key by key, with a key the input lacks left as it
// is.
func TestCopyLines(t *testing.T) {
	var src, dst yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("# input\n---\na: 1\nb:\n  c:\n  - x\n  - y\nd: e\n"), &src))
	require.NoError(t, yaml.Unmarshal([]byte("{b: {c: [x, y]}, added: 0, a: 1, d: e}\n"), &dst))
	yamlnode.CopyLines(&dst, &src)
	root := dst.Content[0]
	for _, tc := range []struct {
		path []string
		line int
	}{
		{[]string{"a"}, 3},
		{[]string{"b"}, 5}, // the value's line: a block mapping starts on the line after its key
		{[]string{"b", "c"}, 6},
		{[]string{"d"}, 8},
		{[]string{"added"}, 1},
	} {
		assert.Equal(t, tc.line, yamlnode.Path(root, tc.path...).Line, tc.path)
	}
	assert.Equal(t, 7, yamlnode.Path(root, "b", "c").Content[1].Line, "the second item")
}

// TestWithoutNodeLines: for a text the user does not see, the lines a
// node holds are left out of the message, one or two, wrapped or not, and
// the error still unwraps to what it wrapped; lines an editor counts in the
// user's input stay.
func TestWithoutNodeLines(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("Deployment web: spec: %w", yamlnode.AtNodeLine(39, "envFrom: expected a list")), "Deployment web: spec: envFrom: expected a list"},
		{yamlnode.AtLine(3, errors.New("a syntax error")), "line 3: a syntax error"},
		{yamlnode.AtNodeLines(`key "k" appears twice`, 3, 4, "; one is kept"), `key "k" appears twice; one is kept`},
		{fmt.Errorf("document 2: data: %w", yamlnode.AtNodeLines(`key "line 3:" appears twice`, 3, 4, "")), `document 2: data: key "line 3:" appears twice`},
		{errors.New("line 5: only text"), "line 5: only text"},
	} {
		assert.Equal(t, tc.want, yamlnode.WithoutNodeLines(tc.err).Error())
	}
	require.NoError(t, yamlnode.WithoutNodeLines(nil))
	cause := errors.New("cause")
	wrapped := fmt.Errorf("x: %w", yamlnode.AtLine(2, cause))
	assert.Same(t, wrapped, yamlnode.WithoutNodeLines(wrapped), "an editor's line stays")
	le := yamlnode.AtNodeLine(2, "msg")
	var target *yamlnode.LineError
	assert.NotErrorAs(t, yamlnode.WithoutNodeLines(le), &target, "no line left to move")
}
