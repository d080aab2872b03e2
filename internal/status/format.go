package status

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/output"
)

// WriteTable writes one line per workload (and one per extra detail), to
// read at a glance.
func WriteTable(w io.Writer, r Report, now time.Time) error {
	if len(r.Workloads) == 0 {
		_, err := fmt.Fprintln(w, "no workload managed by confighash", cmp.Or(r.where, "here"))
		return err
	}
	stale, rolling, unknown, unchecked := 0, 0, 0, 0
	for _, wl := range r.Workloads {
		switch {
		case wl.Config == ConfigCurrent:
		case wl.Config == ConfigUnknown && len(wl.Unreadable) == 0:
			unchecked++
		case wl.Config == ConfigUnknown:
			unknown++
		default:
			stale++
		}
		if !wl.Rollout.Done {
			rolling++
		}
	}
	fmt.Fprintf(w, "%d %s: %d not current for the live configs, %d rolling out", len(r.Workloads),
		output.Plural(len(r.Workloads), "workload", "workloads"), stale, rolling)
	if unknown > 0 {
		fmt.Fprintf(w, ", %d unknown (a consumed config you may not read)", unknown)
	}
	if unchecked > 0 {
		fmt.Fprintf(w, ", %d unknown (the render-time hash needs another HMAC key)", unchecked)
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tCONFIG\tRENDER HASH\tCONTROLLER HASH\tROLLOUT\tSTALE PODS\tLAST CONFIGCHANGED")
	for _, wl := range r.Workloads {
		event := "-"
		if wl.EventsUnreadable {
			event = "? (not allowed to list Events)"
		}
		if e := wl.LastConfigChanged; e != nil {
			event = ago(now.Sub(e.Time)) + " ago: " + e.Message
		}
		pods := fmt.Sprintf("%d/%d", wl.Rollout.StalePods, wl.Rollout.Pods)
		if wl.Rollout.PodsUnreadable {
			pods = "?"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", wl.ID(), configColumn(wl), short(wl.RenderHash), short(wl.ControllerHash),
			rolloutColumn(wl.Rollout), pods, event)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, wl := range r.Workloads {
		var cfgs []string
		for _, c := range wl.Configs {
			s := c.Kind + "/" + c.Name
			switch {
			case c.Whole:
				s += " (all keys"
			default:
				s += " (keys " + strings.Join(c.Keys, ",")
			}
			if c.External {
				s += ", external"
			}
			switch {
			case c.Unreadable:
				s += ", UNREADABLE: forbidden"
			case !c.Found:
				s += ", MISSING"
			}
			cfgs = append(cfgs, s+")")
		}
		fmt.Fprintf(w, "\n%s consumes %s\n  rollout: %s\n", wl.ID(), strings.Join(cfgs, ", "), wl.Rollout.Message)
	}
	return nil
}

func configColumn(w Workload) string {
	switch w.Config {
	case ConfigStale:
		s := "STALE (" + w.Reason
		if len(w.Changed) > 0 {
			s += ": " + strings.Join(w.Changed, ",")
		}
		return s + ")"
	case ConfigBlocked:
		return "BLOCKED (missing " + strings.Join(w.Missing, ",") + ")"
	case ConfigUnknown:
		if len(w.Unreadable) > 0 {
			return "UNKNOWN (cannot read " + strings.Join(w.Unreadable, ",") + ")"
		}
		switch w.KeyMismatch {
		case hashing.MismatchKeyed:
			return "UNKNOWN (hashed with an HMAC key: pass --hmac-key-file)"
		case hashing.MismatchUnkeyed:
			return "UNKNOWN (hashed without an HMAC key, status was given one)"
		case hashing.MismatchOtherKey:
			return "UNKNOWN (hashed with another HMAC key, key-id " + w.RenderKeyID + ")"
		}
		return "UNKNOWN (a hash of an unknown version)"
	}
	return "current"
}

func rolloutColumn(r Rollout) string {
	switch {
	case r.Done:
		return "complete"
	case r.ObservedGeneration < r.Generation:
		return "not yet observed"
	}
	state := "in progress"
	switch {
	case r.Paused:
		state = "paused"
	case r.OnDelete:
		state = "OnDelete"
	}
	s := fmt.Sprintf("%s %d/%d updated, %d available", state, r.Updated, r.Replicas, r.Available)
	if r.PendingPods > 0 {
		s += fmt.Sprintf(", %d pending", r.PendingPods)
	}
	return s
}

// short abbreviates a hash: its mode and 12 hex digits.
func short(h string) string {
	if h == "" {
		return "-"
	}
	if i := strings.IndexByte(h, ':'); i >= 0 && len(h) > i+13 {
		return h[:i+13] + "…"
	}
	return h
}

func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
