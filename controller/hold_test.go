package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestBaselinesTaken: which of the baselines this process wrote another
// writer took from the workload, so that writing them again waits for
// --min-roll-interval (baselineRemoved). Only an annotation the process
// wrote, that it would write again, and that holds neither what it wrote
// nor what it would write counts: its own later writes and first writes
// never wait.
func TestBaselinesTaken(t *testing.T) {
	k := newKeys("confighash.dev")
	const ext, ext2, other, rb, rb2 = "uses=u,Secret/db=h1", "uses=u,Secret/db=h2", "key-id=b,uses=u,Secret/db=h9", "H=L", "H2=L2"
	both := Record{Baseline: ext, RenderBaseline: rb}
	tests := []struct {
		name                       string
		ann                        map[string]string
		wroteBaseline, wroteRender string
		rec                        Record
		taken                      []string
		replaced                   bool
	}{
		{name: "both in place", ann: map[string]string{k.baseline: ext, k.renderBaseline: rb}, wroteBaseline: ext, wroteRender: rb, rec: both},
		{name: "both removed", ann: nil, wroteBaseline: ext, wroteRender: rb, rec: both,
			taken: []string{k.baseline, k.renderBaseline}},
		{name: "external removed, render in place", ann: map[string]string{k.renderBaseline: rb}, wroteBaseline: ext, wroteRender: rb, rec: both,
			taken: []string{k.baseline}},
		{name: "render removed, external in place", ann: map[string]string{k.baseline: ext}, wroteBaseline: ext, wroteRender: rb, rec: both,
			taken: []string{k.renderBaseline}},
		{name: "external replaced under another key id", ann: map[string]string{k.baseline: other}, wroteBaseline: ext, rec: Record{Baseline: ext},
			taken: []string{k.baseline}, replaced: true},
		{name: "external removed, another value due (an edit rolled meanwhile)", ann: nil, wroteBaseline: ext, rec: Record{Baseline: ext2},
			taken: []string{k.baseline}},
		// Not taken: what is there is this process's own write, or what it
		// writes now.
		{name: "own write in place, another value due", ann: map[string]string{k.baseline: ext}, wroteBaseline: ext, rec: Record{Baseline: ext2}},
		{name: "the value due in place", ann: map[string]string{k.baseline: ext2}, wroteBaseline: ext, rec: Record{Baseline: ext2, RenderBaseline: rb2},
			wroteRender: ""},
		// Not taken: never written by this process (a first write, or the
		// render baseline a roll removed).
		{name: "first render baseline after a roll", ann: map[string]string{k.baseline: ext}, wroteBaseline: ext, rec: both},
		{name: "another's value, never written here", ann: map[string]string{k.baseline: other}, rec: Record{Baseline: ext}},
		// Not taken: the record does not write it again.
		{name: "render removed, none due", ann: map[string]string{k.baseline: ext}, wroteBaseline: ext, wroteRender: rb, rec: Record{Baseline: ext}},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			taken, replaced := k.taken(c.ann, c.wroteBaseline, c.wroteRender, c.rec)
			assert.Equal(t, c.taken, taken)
			assert.Equal(t, c.replaced, replaced)
		})
	}
}
