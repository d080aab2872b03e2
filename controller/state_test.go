package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestMemoryKeepsOnlyWhatMatters: the controller's per-workload memory
// holds an entry only while it remembers something; a workload in sync
// costs none (it is most of them, at any scale).
func TestMemoryKeepsOnlyWhatMatters(t *testing.T) {
	req := Request{Kind: "Deployment", Namespace: "ns", Name: "web"}
	tests := []struct {
		name string
		f    func(e *entry)
		kept bool
	}{
		{name: "settled", f: func(e *entry) { e.settle(); e.firstSeen = nil }},
		{name: "nothing", f: func(*entry) {}},
		{name: "a pending mismatch", f: func(e *entry) { e.firstMismatch = time.Unix(1, 0) }, kept: true},
		{name: "a roll's time", f: func(e *entry) { e.lastRoll = time.Unix(1, 0) }, kept: true},
		{name: "a change", f: func(e *entry) { e.changes = []Change{{Name: "app"}} }, kept: true},
		{name: "a missing config", f: func(e *entry) { e.missingSet = "ConfigMap/app" }, kept: true},
		{name: "a warning given", f: func(e *entry) { e.warnedUnknown = true }, kept: true},
		{name: "a first-seen hash", f: func(e *entry) { e.firstSeen = map[string]string{"Secret/db": "h"} }, kept: true},
		{name: "a written version", f: func(e *entry) { e.written = map[string]string{"Secret/db": "7"} }, kept: true},
		{name: "a dry-run overlay", f: func(e *entry) { e.overlayTemplate = map[string]string{"a": "b"} }, kept: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemory()
			m.with(req, tc.f)
			_, ok := m.entries[req]
			assert.Equal(t, tc.kept, ok)
			if tc.kept {
				m.with(req, func(e *entry) { *e = entry{} })
				assert.Empty(t, m.entries, "an entry emptied is dropped")
			}
		})
	}
	m := newMemory()
	m.noteChange(req, Change{Name: "app"})
	m.with(req, func(e *entry) { e.settle() })
	assert.Empty(t, m.entries, "a settled change leaves nothing")
}
