package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// lineOfNth returns the line, counted by line feeds from 1 as an editor
// counts them, on which the nth (from 1) occurrence of marker starts in s.
func lineOfNth(t *testing.T, s, marker string, nth int) int {
	t.Helper()
	at := -1
	for range nth {
		i := strings.Index(s[at+1:], marker)
		if i < 0 {
			t.Fatalf("%q: occurrence %d not in the input", marker, nth)
		}
		at += 1 + i
	}
	return strings.Count(s[:at], "\n") + 1
}

// TestErrorLines: a line an error names is the line an editor shows. The
// message may quote a key of the input that reads like a line ("line 3:"),
// which must come out as written while the lines move with the document's
// place in the stream, also in a message that names no line; and a line break YAML reads where an editor sees
// none (NEL, LS, PS written as they are, a lone carriage return, all
// allowed in a quoted value) must not move the lines after it. Both in a
// plain stream and in a ResourceList, and in every command that reads one.
func TestErrorLines(t *testing.T) {
	twiceNamedLikeALine := configMap + "  \"line 3:\": a\n  \"line 3:\": b\n"
	annotated := func(obj, value string) string {
		return strings.Replace(obj, "metadata:\n", "metadata:\n  annotations:\n    note: \""+value+"\"\n", 1)
	}
	twoKeys := func(obj string) string { return obj + "  k: again\n" }
	notAList := strings.Replace(deployment, "        envFrom:\n        - configMapRef:\n            name: cfg\n", "        envFrom: 5\n", 1)
	badMerge := strings.Replace(configMap, "data:\n", "data:\n  <<: 5\n", 1)
	type want struct {
		marker string
		nth    int
	}
	for _, tc := range []struct {
		name   string
		stream string
		// format holds a %d for each line, found at the markers.
		format  string
		markers []want
	}{
		{"a key that reads like a line, in the second document", configMap + "---\n" + twiceNamedLikeALine,
			`data: key "line 3:" appears twice (lines %d and %d)`, []want{{`"line 3:"`, 1}, {`"line 3:"`, 2}}},
		{"a key that reads like a line, in an error that names no line", configMap + "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  \"line 3:\": \"!!!\"\n",
			`data.line 3:: not valid base64`, nil},
		{"a key written twice after a quoted LINE SEPARATOR", deployment + "---\n" + twoKeys(annotated(configMap, "a\u2028b")),
			`key "k" appears twice (lines %d and %d)`, []want{{"  k: v", 1}, {"  k: again", 1}}},
		{"a key written twice after a quoted NEL and PS", twoKeys(annotated(configMap, "a\u0085b\u2029c")) + "---\n" + deployment,
			`key "k" appears twice (lines %d and %d)`, []want{{"  k: v", 1}, {"  k: again", 1}}},
		{"a key written twice after a quoted lone carriage return", twoKeys(annotated(configMap, "a\rb")) + "---\n" + deployment,
			`key "k" appears twice (lines %d and %d)`, []want{{"  k: v", 1}, {"  k: again", 1}}},
		{"a pod spec field", configMap + "---\n" + notAList,
			"line %d: containers[0].envFrom: expected a list", []want{{"envFrom: 5", 1}}},
		{"a pod spec field after a quoted NEL", configMap + "---\n" + annotated(notAList, "a\u0085b"),
			"line %d: containers[0].envFrom: expected a list", []want{{"envFrom: 5", 1}}},
		{"a merge key after a quoted PARAGRAPH SEPARATOR", annotated(badMerge, "a\u2029b") + "---\n" + deployment,
			"line %d: a merge key (<<) takes a map", []want{{"<<: 5", 1}}},
	} {
		for _, mode := range []string{"stream", "KRM", "KRM after a comment and ---"} {
			input := tc.stream
			switch mode {
			case "KRM":
				input = testtools.ResourceList(tc.stream, "")
			case "KRM after a comment and ---":
				// kio reads the document after a "---" line on its own.
				input = "# saved from kpt\n---\n" + testtools.ResourceList(tc.stream, "")
			}
			lines := make([]any, len(tc.markers))
			for i, m := range tc.markers {
				lines[i] = lineOfNth(t, input, m.marker, m.nth)
			}
			wantMsg := fmt.Sprintf(tc.format, lines...)
			t.Run(tc.name+", "+mode, func(t *testing.T) {
				good, _ := diffInputs(t, configMap+"---\n"+deployment, "")
				for _, args := range [][]string{nil, {"explain"}, {"explain", "--json"}, {"verify"}, {"diff", good, "-"}} {
					code, out, errOut := run(t, input, args...)
					assert.Equal(t, 1, code, "%s: %s", args, errOut)
					assert.Empty(t, out, "%s: nothing on stdout", args)
					assert.Contains(t, errOut, wantMsg, args)
				}
			})
		}
	}
}

// TestOrchestratorInputNamesNoLine: a ResourceList whose items carry the
// index annotation kustomize and kpt write is theirs, written anew: its
// lines are in no file of the user's, so an error names the object and the
// field without one. A ResourceList without it keeps the line
// (TestErrorLines).
func TestOrchestratorInputNamesNoLine(t *testing.T) {
	notAList := strings.Replace(deployment, "        envFrom:\n        - configMapRef:\n            name: cfg\n", "        envFrom: 5\n", 1)
	indexed := strings.Replace(notAList, "metadata:\n", "metadata:\n  annotations:\n    config.kubernetes.io/index: '1'\n", 1)
	code, out, errOut := run(t, testtools.ResourceList(configMap+"---\n"+indexed, ""))
	assert.Equal(t, 1, code, errOut)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "Deployment web")
	assert.Contains(t, errOut, "spec.template.spec: containers[0].envFrom: expected a list")
	assert.NotContains(t, errOut, "line ")
}
