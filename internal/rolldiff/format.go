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

// WriteMarkdown writes the diff as a pull-request comment: a heading with
// the summary, then a table.
func WriteMarkdown(w io.Writer, r Result) error {
	var b strings.Builder
	b.WriteString("### confighash diff\n\n")
	b.WriteString("**" + mdEscape(r.Summary) + "**\n")
	if notable := r.Notable(); len(notable) > 0 {
		b.WriteString("\n| workload | rolls | why |\n| --- | --- | --- |\n")
		for _, wl := range notable {
			why := wl.Why()
			for i := range why {
				why[i] = mdEscape(why[i])
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", wl.ID(), rollsColumn(wl), strings.Join(why, "<br>"))
		}
	}
	if unchanged := r.Total - len(r.Notable()); unchanged > 0 {
		fmt.Fprintf(&b, "\n%d other %s unchanged.\n", unchanged, output.Plural(unchanged, "workload is", "workloads are"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscape keeps text inside one table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`).Replace(s)
}
