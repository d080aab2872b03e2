package rolldiff

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/confighash/confighash/internal/output"
)

// cause is the short form of why a workload rolls, for the summary.
func (w Workload) cause() string {
	var parts []string
	for _, c := range w.Configs {
		parts = append(parts, c.reason())
	}
	if len(w.Template) > 0 {
		parts = append(parts, templateCause(w.Template))
	}
	if len(parts) == 0 {
		return "its consumed config changed"
	}
	return strings.Join(parts, " and ")
}

// SummaryCauses is how many causes the summary names, the most common
// first; the table names every workload's.
const SummaryCauses = 5

// summary is the one-line summary: how many roll, grouped by cause, then
// the new and removed workloads and stale hashes.
func summary(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d %s %s", r.Rolling, r.Total, output.Plural(r.Total, "workload", "workloads"), output.Plural(r.Rolling, "rolls", "roll"))
	counts := map[string]int{}
	stale := 0
	var hints []string
	for _, w := range r.Workloads {
		if w.Status == StatusRolls {
			counts[w.cause()]++
		}
		if len(w.StaleHashes) > 0 {
			stale++
		}
		for _, s := range w.StaleHashes {
			if h := s.hint(); h != "" && !slices.Contains(hints, h) {
				hints = append(hints, h)
			}
		}
	}
	causes := make([]string, 0, len(counts))
	for c := range counts {
		causes = append(causes, c)
	}
	sort.Slice(causes, func(i, j int) bool {
		if counts[causes[i]] != counts[causes[j]] {
			return counts[causes[i]] > counts[causes[j]]
		}
		return causes[i] < causes[j]
	})
	for i, c := range causes[:min(len(causes), SummaryCauses)] {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d because %s", counts[c], c)
	}
	if more := causes[min(len(causes), SummaryCauses):]; len(more) > 0 {
		workloads := 0
		for _, c := range more {
			workloads += counts[c]
		}
		fmt.Fprintf(&b, ", and %d more for %d other %s (below)", workloads, len(more), output.Plural(len(more), "cause", "causes"))
	}
	var extra []string
	if r.New > 0 {
		extra = append(extra, fmt.Sprintf("%d new", r.New))
	}
	if r.Removed > 0 {
		extra = append(extra, fmt.Sprintf("%d removed", r.Removed))
	}
	if stale > 0 {
		line := fmt.Sprintf("%d with a hash annotation that does not match its content", stale)
		if len(hints) > 0 {
			sort.Strings(hints)
			line += " (" + strings.Join(hints, "; ") + ")"
		}
		extra = append(extra, line)
	}
	if len(extra) > 0 {
		b.WriteString("; " + strings.Join(extra, ", "))
	}
	return b.String()
}

// Notable returns the workloads worth a line in a table: those that roll,
// are new or removed, or carry a stale hash.
func (r Result) Notable() []Workload {
	var out []Workload
	for _, w := range r.Workloads {
		if w.Status != StatusUnchanged || len(w.StaleHashes) > 0 {
			out = append(out, w)
		}
	}
	return out
}

// Why is the workload's line of explanation for a table.
func (w Workload) Why() []string {
	var out []string
	switch w.Status {
	case StatusNew:
		out = append(out, "new workload")
	case StatusRemoved:
		out = append(out, "removed workload")
	}
	out = append(out, w.Reasons...)
	if note := w.jobNote(); note != "" {
		out = append(out, note)
	}
	if w.OptedOut {
		out = append(out, "opted out of confighash")
	}
	for _, s := range w.StaleHashes {
		found := s.Found
		if found == "" {
			found = `""`
		}
		line := fmt.Sprintf("the %s render's hash annotation %s does not match its content", s.Render, short(found))
		if h := s.hint(); h != "" {
			line += " (" + h + ")"
		}
		out = append(out, line)
	}
	return out
}

// short abbreviates a hash value for tables: its mode and 12 hex digits.
func short(h string) string {
	if i := strings.IndexByte(h, ':'); i >= 0 && len(h) > i+13 {
		return h[:i+13] + "…"
	}
	return h
}

// jobNote says what applying a render does to an existing Job that
// "rolls": its pods ran once and do not run again, and the API server
// refuses any change of its pod template.
func (w Workload) jobNote() string {
	switch {
	case !w.job || w.Status != StatusRolls:
		return ""
	case len(w.Template) > 0:
		return "a Job: the API server refuses any change of an existing Job's pod template, so delete the Job before applying this (Helm re-creates hook Jobs)"
	}
	return "a Job: applying this changes its hash annotation only, it runs nothing again; the Job runs with the new config when it is re-created (Helm re-creates hook Jobs; delete a regular one to run it again)"
}
