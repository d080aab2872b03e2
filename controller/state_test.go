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
		{name: "a baseline written", f: func(e *entry) { e.wroteBaselines(time.Unix(1, 0), Record{RenderBaseline: "H=L"}) }, kept: true},
		{name: "a baseline write forgotten", f: func(e *entry) {
			e.wroteBaselines(time.Unix(1, 0), Record{Baseline: "Secret/db=h", RenderBaseline: "H=L"})
			e.forgetBaselines()
		}},
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
	m.noteChange(req, Change{Name: "app"}, "7", false)
	m.with(req, func(e *entry) { e.settle() })
	assert.Empty(t, m.entries, "a settled change leaves nothing")
}

// TestRenderStarted: a render's pods read the live content when the pod
// template took the render's hash after the last consumed config change; the
// resourceVersions the two were written at decide, whatever order the
// watches delivered them in, and the delivery order where a version is not
// a number. A change seen while a config the pods require was missing does
// not count: the pods start on it.
func TestRenderStarted(t *testing.T) {
	req := Request{Kind: "Deployment", Namespace: "shop", Name: "web"}
	type event struct {
		render, rv string // a template event when render is set, else a config change
	}
	for _, tc := range []struct {
		name   string
		events []event
		want   bool
		// held is the index of a config change seen while a config the pods
		// require was missing (-1 for none).
		held int
	}{
		{"no render seen", []event{{"", "10"}}, false, -1},
		{"render seen, no config change", []event{{"r2", "10"}}, true, -1},
		{"config then template, in order", []event{{"", "10"}, {"r2", "11"}}, true, -1},
		{"config written first, delivered after the template", []event{{"r2", "11"}, {"", "10"}}, true, -1},
		{"config written after the template", []event{{"r2", "11"}, {"", "12"}}, false, -1},
		{"config written after, delivered first", []event{{"", "12"}, {"r2", "11"}}, false, -1},
		{"one of two configs written after", []event{{"", "10"}, {"r2", "11"}, {"", "12"}}, false, -1},
		{"a deletion (no version) after the template", []event{{"r2", "11"}, {"", ""}}, false, -1},
		{"a deletion (no version) before the template", []event{{"", ""}, {"r2", "11"}}, true, -1},
		{"versions that are not numbers: delivery order", []event{{"", "b"}, {"r2", "a"}}, true, -1},
		{"versions that are not numbers, config last", []event{{"r2", "a"}, {"", "b"}}, false, -1},
		{"another render since", []event{{"r2", "11"}, {"r3", "12"}}, false, -1},
		{"config written after, while held back", []event{{"r2", "11"}, {"", "12"}}, true, 1},
		{"held back, then written after once startable", []event{{"r2", "11"}, {"", "12"}, {"", "13"}}, false, 1},
		{"held back with no render noted: counts", []event{{"", "12"}, {"r2", "11"}}, false, 0},
		{"a deletion (no version) while held back: counts", []event{{"r2", "11"}, {"", ""}}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemory()
			for i, e := range tc.events {
				if e.render != "" {
					m.noteRender(req, e.render, e.rv)
				} else {
					m.noteChange(req, Change{Name: "app"}, e.rv, i == tc.held)
				}
			}
			assert.Equal(t, tc.want, m.renderStarted(req, "r2"))
		})
	}
}

// TestCreatedAt: a workload seen created (not listed at start-up) notes its
// render at the resourceVersion of its creation, which the reconciler holds
// the consumed configs' versions to; a template change since, another
// render, or the render forgotten ends that.
func TestCreatedAt(t *testing.T) {
	req := Request{Kind: "Deployment", Namespace: "shop", Name: "web"}
	for _, tc := range []struct {
		name    string
		f       func(m *memory)
		want    uint64
		started bool
	}{
		{"created", func(m *memory) { m.noteCreated(req, "r2", "11") }, 11, true},
		{"a template change, not a creation", func(m *memory) { m.noteRender(req, "r2", "11") }, 0, true},
		{"created, then another render", func(m *memory) { m.noteCreated(req, "r2", "11"); m.noteRender(req, "r3", "12") }, 0, false},
		{"created, then a template change to the same render", func(m *memory) { m.noteCreated(req, "r2", "11"); m.noteRender(req, "r2", "12") }, 0, true},
		{"created, the render forgotten", func(m *memory) {
			m.noteCreated(req, "r2", "11")
			m.with(req, func(e *entry) { e.forgetRender("r2") })
		}, 0, false},
		{"created, a config change delivered after", func(m *memory) {
			m.noteCreated(req, "r2", "11")
			m.noteChange(req, Change{Name: "app"}, "12", false)
		}, 11, false},
		{"created, a config change while held back", func(m *memory) {
			m.noteCreated(req, "r2", "11")
			m.noteChange(req, Change{Kind: "ConfigMap", Name: "app"}, "12", true)
		}, 11, true},
		{"created at a version that is no number", func(m *memory) { m.noteCreated(req, "r2", "x") }, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemory()
			tc.f(m)
			created, _ := m.createdAt(req, "r2")
			assert.Equal(t, tc.want, created)
			assert.Equal(t, tc.started, m.renderStarted(req, "r2"))
		})
	}
	t.Run("the versions written while held back go with the render", func(t *testing.T) {
		m := newMemory()
		m.noteCreated(req, "r2", "11")
		m.noteChange(req, Change{Kind: "ConfigMap", Name: "app"}, "12", true)
		m.noteChange(req, Change{Kind: "ConfigMap", Name: "app"}, "14", true)
		_, held := m.createdAt(req, "r2")
		assert.Equal(t, map[string]string{"ConfigMap/app": "14"}, held)
		m.with(req, func(e *entry) { e.settle(); e.forgetRender("r2") })
		assert.Empty(t, m.entries, "nothing left to remember")
	})
}

// TestNoteUnchanged: a write of a config's metadata alone takes the place
// of a version that did not count against a render noted at the
// workload's creation, and of no other.
func TestNoteUnchanged(t *testing.T) {
	req := Request{Kind: "Deployment", Namespace: "shop", Name: "web"}
	const ref = "ConfigMap/app"
	for _, tc := range []struct {
		name string
		f    func(m *memory)
		want map[string]string // the versions that do not count
	}{
		{"written before the creation", func(m *memory) {
			m.noteCreated(req, "r2", "11")
			m.noteUnchanged(req, ref, "9", "15")
		}, map[string]string{ref: "15"}},
		{"a change held back", func(m *memory) {
			m.noteCreated(req, "r2", "11")
			m.noteChange(req, Change{Kind: "ConfigMap", Name: "app"}, "12", true)
			m.noteUnchanged(req, ref, "12", "15")
		}, map[string]string{ref: "15"}},
		{"a change after the creation that was not seen", func(m *memory) {
			m.noteCreated(req, "r2", "11")
			m.noteUnchanged(req, ref, "13", "15")
		}, nil},
		{"a change that counts", func(m *memory) {
			m.noteCreated(req, "r2", "11")
			m.noteChange(req, Change{Kind: "ConfigMap", Name: "app"}, "12", false)
			m.noteUnchanged(req, ref, "12", "15")
		}, nil},
		{"a template change, not a creation", func(m *memory) {
			m.noteRender(req, "r2", "11")
			m.noteUnchanged(req, ref, "9", "15")
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemory()
			tc.f(m)
			m.mu.Lock()
			defer m.mu.Unlock()
			assert.Equal(t, tc.want, m.entries[req].held)
		})
	}
	t.Run("no entry: none made", func(t *testing.T) {
		m := newMemory()
		m.noteUnchanged(req, ref, "9", "15")
		assert.Empty(t, m.entries)
	})
}
