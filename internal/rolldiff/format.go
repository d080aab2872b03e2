package rolldiff

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/confighash/confighash/internal/output"
)

// WriteText writes the summary line, then a table of the workloads that
// roll, are new or removed, or carry a stale hash.
func WriteText(w io.Writer, r Result) error {
	if _, err := fmt.Fprintln(w, r.Summary); err != nil {
		return err
	}
	notable := r.Notable()
	if len(notable) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nWORKLOAD\tROLLS\tWHY")
	for _, wl := range notable {
		why := wl.Why()
		if len(why) == 0 {
			why = []string{""}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", wl.ID(), rollsColumn(wl), why[0])
		for _, more := range why[1:] {
			fmt.Fprintf(tw, "\t\t%s\n", more)
		}
	}
	return tw.Flush()
}

func rollsColumn(w Workload) string {
	switch w.Status {
	case StatusRolls:
		return "yes"
	case StatusUnchanged:
		return "no"
	}
	return string(w.Status)
}

// MarkdownLimit is the most characters WriteMarkdown writes: what GitHub
// takes in a comment (GitLab takes more).
const MarkdownLimit = 65536

// WriteMarkdown writes the diff as a pull-request comment: a heading with
// the summary, then a table.
func WriteMarkdown(w io.Writer, r Result) error {
	var b strings.Builder
	b.WriteString("### confighash diff\n\n")
	b.WriteString("**" + mdEscape(r.Summary) + "**\n")
	notable := r.Notable()
	var end strings.Builder
	if unchanged := r.Total - len(notable); unchanged > 0 {
		fmt.Fprintf(&end, "\n%d other %s unchanged.\n", unchanged, output.Plural(unchanged, "workload is", "workloads are"))
	}
	if len(notable) > 0 {
		b.WriteString("\n| workload | rolls | why |\n| --- | --- | --- |\n")
		for i, wl := range notable {
			why := wl.Why()
			for i := range why {
				why[i] = mdEscape(why[i])
			}
			row := fmt.Sprintf("| `%s` | %s | %s |\n", wl.ID(), rollsColumn(wl), strings.Join(why, "<br>"))
			// Rows while they fit, with room for the note that says how
			// many did not and for the end; counted in bytes, which are
			// never fewer than characters.
			if b.Len()+len(row)+len(markdownOmitted(len(notable)))+end.Len() > MarkdownLimit {
				b.WriteString(markdownOmitted(len(notable) - i))
				break
			}
			b.WriteString(row)
		}
	}
	b.WriteString(end.String())
	_, err := io.WriteString(w, b.String())
	return err
}

// markdownOmitted is the note that ends a table WriteMarkdown cut short.
func markdownOmitted(n int) string {
	return fmt.Sprintf("\n_%d more %s (rolling, new or removed, or with a stale hash) not listed: too many for one comment; `confighash diff` without `--markdown` lists every one._\n",
		n, output.Plural(n, "workload", "workloads"))
}

// mdEscape keeps text inside one table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`).Replace(s)
}
