package rolldiff_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/rolldiff"
)

// bumped is stream(n) with the value of every ConfigMap changed: each
// Deployment rolls for a cause of its own.
func bumped(n int) []byte {
	return []byte(strings.ReplaceAll(string(stream(n)), "data: {A: \"", "data: {A: \"new-"))
}

// TestLargeDiffs: the summary line and the pull-request comment stay
// readable and postable when many workloads roll for many causes. Before,
// the summary named every cause (a diff of 4,000 Deployments, 1,144 rolling
// for 572 causes, printed a summary line of 30,000 characters), and
// --markdown wrote every row (100 KB there), which GitHub refuses to post: a
// comment holds at most 65,536 characters.
func TestLargeDiffs(t *testing.T) {
	for _, n := range []int{3, rolldiff.SummaryCauses, rolldiff.SummaryCauses + 1, 40, 3000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			old, err := rolldiff.Read("old", stream(n), inject.Options{})
			require.NoError(t, err)
			cur, err := rolldiff.Read("new", bumped(n), inject.Options{})
			require.NoError(t, err)
			res := rolldiff.Compare(old, cur)
			require.Equal(t, n, res.Rolling)
			named := strings.Count(res.Summary, " because ConfigMap shop/cm-")
			assert.Equal(t, min(n, rolldiff.SummaryCauses), named, res.Summary)
			if n > rolldiff.SummaryCauses {
				more := n - rolldiff.SummaryCauses
				assert.Contains(t, res.Summary, fmt.Sprintf(", and %d more for %d other %s (below)", more, more, map[bool]string{true: "cause", false: "causes"}[more == 1]))
			}

			var md strings.Builder
			require.NoError(t, rolldiff.WriteMarkdown(&md, res))
			assert.LessOrEqual(t, utf8.RuneCountInString(md.String()), rolldiff.MarkdownLimit, "GitHub's limit for a comment")
			rows := strings.Count(md.String(), "\n| `Deployment shop/")
			if n <= 40 {
				assert.Equal(t, n, rows, "every workload that rolls has its row")
				assert.NotContains(t, md.String(), "not listed")
				return
			}
			require.Less(t, rows, n)
			assert.Contains(t, md.String(), fmt.Sprintf("%d more workloads (rolling, new or removed, or with a stale hash) not listed", n-rows))

			var text strings.Builder
			require.NoError(t, rolldiff.WriteText(&text, res))
			assert.Equal(t, n, strings.Count(text.String(), "\nDeployment shop/"), "the text output has every row")
		})
	}
}

// TestManyKeysChanged: a workload that reads a config whose thousands of
// keys all changed has a reason naming some of them and how many more, in
// the summary and the table; the JSON lists every key. Before, the summary
// and the table's line named all 6,000 (574 KB of text, 286 KB of it the
// summary, so no --markdown could be posted).
func TestManyKeysChanged(t *testing.T) {
	const keys = 6000
	render := func(value string) []byte {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: shop}\ndata:\n")
		for i := range keys {
			fmt.Fprintf(&b, "  key.%04d: %q\n", i, value)
		}
		b.WriteString("---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  template:\n    spec:\n" +
			"      containers:\n      - name: c\n        image: nginx\n        envFrom: [{configMapRef: {name: big}}]\n")
		return []byte(b.String())
	}
	old, err := rolldiff.Read("old", render("a"), inject.Options{})
	require.NoError(t, err)
	cur, err := rolldiff.Read("new", render("b"), inject.Options{})
	require.NoError(t, err)
	res := rolldiff.Compare(old, cur)
	require.Len(t, res.Workloads, 1)
	w := res.Workloads[0]
	require.Len(t, w.Configs, 1)
	assert.Len(t, w.Configs[0].Changed, keys, "the JSON names every key")
	require.Len(t, w.Reasons, 1)
	more := fmt.Sprintf("and %d more changed", keys-rolldiff.ReasonKeys)
	assert.Contains(t, w.Reasons[0], "keys key.0000, key.0001")
	assert.Contains(t, w.Reasons[0], more)
	assert.Less(t, len(w.Reasons[0]), 1000)
	assert.Contains(t, res.Summary, more)
	var md strings.Builder
	require.NoError(t, rolldiff.WriteMarkdown(&md, res))
	assert.Contains(t, md.String(), "| `Deployment shop/web` | yes | ConfigMap shop/big keys key.0000")
	assert.Less(t, md.Len(), 2000)
}
