package controller

import (
	"maps"
	"math"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/confighash/confighash/hashing"
)

// Request names one workload to reconcile.
type Request struct {
	// Kind is the workload kind: Deployment, StatefulSet, DaemonSet, CronJob
	// or Rollout.
	Kind      string
	Namespace string
	Name      string
}

// String renders the request as "Kind namespace/name".
func (r Request) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// Op is what happened to a config.
type Op string

// The config operations an event can name.
const (
	OpChanged Op = "changed"
	OpCreated Op = "created"
	OpDeleted Op = "deleted"
)

// Change is one observed edit of a ConfigMap or Secret, kept for the Event
// that explains a roll. It holds key names, never values.
type Change struct {
	Kind      hashing.Kind
	Namespace string
	Name      string
	UID       types.UID
	Op        Op
	// Keys are the added, removed or changed keys of an OpChanged.
	Keys []string
}

// entry is what the controller remembers about one workload between
// reconciles. Losing it (a restart) delays nothing by more than the
// coalescing window and never changes a decision.
type entry struct {
	firstMismatch time.Time
	lastRoll      time.Time
	// lastBaseline is when this process last wrote a baseline on the
	// workload (kept for --min-roll-interval; a roll writes the external
	// one too), wroteBaseline and wroteRender the values it wrote then of
	// the external and the render baseline ("" for one it did not write or
	// removed), heldBaseline that it has since held one back because
	// another writer removed or replaced one of them.
	lastBaseline               time.Time
	wroteBaseline, wroteRender string
	heldBaseline               bool
	changes                    []Change
	// missing is the set of missing configs last warned about; missingSet
	// the set seen since missingSince.
	missing       string
	missingSet    string
	missingSince  time.Time
	warnedUnknown bool
	// firstSeen holds, for an external config the workload has no baseline
	// of yet, its hash as this process first observed it, by Kind/name: an
	// edit made before the baseline is written must not be absorbed into it.
	// It goes once a baseline (or a roll) is written.
	firstSeen map[string]string
	// firstRender is a render baseline another writer of the workload
	// removed, the pod template left as it was (the annotation's value):
	// the pods still read what it names. It goes with firstSeen.
	firstRender string
	// written holds the resourceVersion of each external config a baseline
	// this process wrote was computed from, by Kind/name, until that
	// config's next event: if the event brings exactly that version, the
	// baseline was read after the edit reached the cache and absorbed it.
	written map[string]string
	// overlay holds, in dry-run mode, the annotations the controller would
	// have written, on the workload (meta) and its pod template.
	overlayMeta, overlayTemplate map[string]string
	// changeSeq is when (in memory.seq) a config the workload consumes was
	// last seen to change, changeRV the highest resourceVersion such a
	// change was written at (unknownRV when one did not read as a number);
	// renderSeq and renderRV when, and at which resourceVersion, its pod
	// template was seen to take the render-time hash render. See
	// renderStarted.
	changeSeq, changeRV uint64
	renderSeq, renderRV uint64
	render              string
	// created says the render was noted when the workload was created
	// (noteCreated), not when its template changed.
	created bool
	// held holds, by Kind/name, the resourceVersion of the last change of a
	// consumed config seen while a config the pods require was missing,
	// with a render noted: no pod of the render can have run before it, so
	// the pods start on it, and it does not count as a change after the
	// render (renderStarted). A write of the config's metadata alone after
	// such a version, or after the workload's creation, takes its place
	// (noteUnchanged). It goes with the render.
	held map[string]string
	// lost holds, by Kind/name, the configs the pods require that this
	// process saw go missing (deleted, a required key removed) while no
	// other was: pods that ran before keep running without them, so their
	// absence does not hold the workload back (see Reconciler.heldBack).
	// A config goes from it when it is back, all of them when the pod
	// template takes a new render.
	lost map[string]bool
	// back holds, by Kind/name, the creation time of a config of lost
	// created again: its creation does not say that the pods just started
	// (see Landed), until backUntil has passed with no mismatch pending.
	back      map[string]time.Time
	backUntil time.Time
}

// unknownRV stands for a resourceVersion that is not a number.
const unknownRV = math.MaxUint64

// parseRV reads a resourceVersion; 0 when it is not a number.
func parseRV(rv string) uint64 {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// settle forgets a mismatch: the pods reflect the live configs.
func (e *entry) settle() {
	e.firstMismatch, e.changes = time.Time{}, nil
	e.clearMissing()
}

func (e *entry) clearMissing() {
	e.missing, e.missingSet, e.missingSince = "", "", time.Time{}
}

// empty reports whether the entry remembers nothing, so it can go: most
// workloads are in sync most of the time, and cost no entry then.
func (e *entry) empty() bool {
	return e.firstMismatch.IsZero() && e.lastRoll.IsZero() && e.lastBaseline.IsZero() && e.wroteBaseline == "" && e.wroteRender == "" && len(e.changes) == 0 &&
		e.missing == "" && e.missingSet == "" && e.missingSince.IsZero() && !e.warnedUnknown &&
		len(e.firstSeen) == 0 && e.firstRender == "" && len(e.written) == 0 && len(e.overlayMeta) == 0 && len(e.overlayTemplate) == 0 &&
		e.render == "" && len(e.held) == 0 && len(e.lost) == 0 &&
		len(e.back) == 0 && e.backUntil.IsZero()
}

// memory holds the entries of the workloads that have something to
// remember (see entry.empty).
type memory struct {
	mu      sync.Mutex
	entries map[Request]*entry
	missing int
	// seq orders the config and workload events the handlers note.
	seq uint64
}

func newMemory() *memory { return &memory{entries: map[Request]*entry{}} }

// with runs f on the workload's entry, creating it, under the lock.
func (m *memory) with(req Request, f func(e *entry)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[req]
	if !ok {
		e = &entry{}
		m.entries[req] = e
	}
	hadMissing := e.missing != ""
	f(e)
	m.countMissing(hadMissing, e.missing != "")
	if e.empty() {
		delete(m.entries, req)
	}
}

// noteChange records a config change for a workload, keeping the latest few;
// rv is the resourceVersion the change was written at ("" for a deletion,
// whose version a watch may not tell). held says a config the pods require
// was missing when it was written: with a render noted, the change is kept
// for the Event, but the pods of the render start on it (see entry.held).
func (m *memory) noteChange(req Request, c Change, rv string, held bool) {
	m.with(req, func(e *entry) {
		e.changes = append(e.changes, c)
		if n := len(e.changes); n > maxPendingChangesPerEntry {
			e.changes = append([]Change(nil), e.changes[n-maxPendingChangesPerEntry:]...)
		}
		if held && e.render != "" && rv != "" {
			if e.held == nil {
				e.held = map[string]string{}
			}
			e.held[string(c.Kind)+"/"+c.Name] = rv
			return
		}
		m.seq++
		e.changeSeq = m.seq
		switch v := parseRV(rv); {
		case v == 0:
			e.changeRV = unknownRV
		case v > e.changeRV && e.changeRV != unknownRV:
			e.changeRV = v
		}
	})
}

// wroteBaselines remembers that this process wrote the baselines of rec
// at now (the render baseline removed when rec has none), for the hold of
// baselineRemoved.
func (e *entry) wroteBaselines(now time.Time, rec Record) {
	e.lastBaseline, e.wroteBaseline, e.wroteRender, e.heldBaseline = now, rec.Baseline, rec.RenderBaseline, false
}

// forgetBaselines forgets the last baseline write, once an interval has
// passed since.
func (e *entry) forgetBaselines() {
	e.lastBaseline, e.wroteBaseline, e.wroteRender, e.heldBaseline = time.Time{}, "", "", false
}

// forgetRender forgets the render noted for the pod template once a
// decision on that render is made. A render noted since, which the decision
// (made on a cache read before it) did not see, is kept.
func (e *entry) forgetRender(decided string) {
	if e.render == decided {
		e.render, e.renderSeq, e.created, e.held = "", 0, false, nil
	}
}

// noteRender remembers that the workload's pod template took the
// render-time hash render, written at resourceVersion rv: the template
// changed, and the pods it starts read the configs as they are from then on.
func (m *memory) noteRender(req Request, render, rv string) { m.noteTemplate(req, render, rv, false) }

// noteCreated is noteRender for a workload this process saw created (not
// listed at start-up), at resourceVersion rv: the pods it starts read the
// configs as they are from its creation on, like the pods of a template
// change (kubectl replace --force, a workload deleted and applied again).
func (m *memory) noteCreated(req Request, render, rv string) { m.noteTemplate(req, render, rv, true) }

func (m *memory) noteTemplate(req Request, render, rv string, created bool) {
	m.with(req, func(e *entry) {
		m.seq++
		e.render, e.renderSeq, e.renderRV, e.created = render, m.seq, parseRV(rv), created
		e.lost, e.back, e.backUntil = nil, nil, time.Time{}
	})
}

// lost returns the required configs the workload's pods may run without
// (entry.lost), nil when there are none.
func (m *memory) lost(req Request) map[string]bool {
	return copyOf(m, req, func(e *entry) map[string]bool { return e.lost })
}

// copyOf returns a copy of the map that get picks from a workload's
// entry, nil when it is empty.
func copyOf[V any](m *memory, req Request, get func(*entry) map[string]V) map[string]V {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[req]; ok && len(get(e)) > 0 {
		return maps.Clone(get(e))
	}
	return nil
}

// noteLost remembers that a required config, ref, went missing while the
// workload's pods may have been running.
func (m *memory) noteLost(req Request, ref string) {
	m.with(req, func(e *entry) {
		if e.lost == nil {
			e.lost = map[string]bool{}
		}
		e.lost[ref] = true
	})
}

// noteBack forgets ref as lost, now that it exists again, created at
// created (the API server's time), and remembers that creation until
// until (see entry.back).
func (m *memory) noteBack(req Request, ref string, created, until time.Time) {
	m.with(req, func(e *entry) {
		delete(e.lost, ref)
		if len(e.lost) == 0 {
			e.lost = nil
		}
		if e.back == nil {
			e.back = map[string]time.Time{}
		}
		e.back[ref], e.backUntil = created, until
	})
}

// back returns a copy of entry.back (nil when it is empty).
func (m *memory) back(req Request) map[string]time.Time {
	return copyOf(m, req, func(e *entry) map[string]time.Time { return e.back })
}

// expireBack forgets entry.back once backUntil has passed at now with no
// mismatch pending (a roll the creation of an optional config calls for
// waits out the coalescing window, and the reconcile that ends the wait
// expires it then). It returns backUntil when that is still to come, the
// time to come back, else the zero time.
func (m *memory) expireBack(req Request, now time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[req]
	switch {
	case !ok || e.backUntil.IsZero():
		return time.Time{}
	case now.Before(e.backUntil):
		return e.backUntil
	case !e.firstMismatch.IsZero():
		return time.Time{}
	}
	e.back, e.backUntil = nil, time.Time{}
	if e.empty() {
		delete(m.entries, req)
	}
	return time.Time{}
}

// createdAt returns the resourceVersion a workload was created at when the
// render noted for it is render and was noted at its creation, else 0, and
// the versions of the changes seen while its pods were held back
// (entry.held).
func (m *memory) createdAt(req Request, render string) (uint64, map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[req]; ok && e.created && e.render == render {
		return e.renderRV, maps.Clone(e.held)
	}
	return 0, nil
}

// noteUnchanged records that config ref, consumed by a workload whose
// render was noted at its creation, was written again at resourceVersion
// after with its content as at before (its metadata only): if before did
// not count against the render (written before the creation, or a change
// held back), after does not either (see createdAt). A workload without
// such a render is left as it is, and costs no entry.
func (m *memory) noteUnchanged(req Request, ref, before, after string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[req]
	if !ok || !e.created || e.render == "" {
		return
	}
	if b := parseRV(before); (b != 0 && b <= e.renderRV) || (before != "" && before == e.held[ref]) {
		if e.held == nil {
			e.held = map[string]string{}
		}
		e.held[ref] = after
	}
}

// rendering reports whether a render is noted for the workload, one whose
// pods may not have started yet.
func (m *memory) rendering(req Request) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[req]
	return ok && e.render != ""
}

// renderStarted reports whether the pod template took the render-time hash
// render after every consumed config change this process saw (but those
// seen while its pods were held back, entry.held): the pods it started
// read the live content. The resourceVersions the writes were made
// at tell (one etcd numbers every write of the cluster in one sequence), as
// the order in which the watches delivered them does not: a render applies
// its ConfigMap before its Deployment, yet the two watches may deliver them
// the other way round. Where a version is not a number, the delivery order
// decides (a roll at worst, never a missed one).
func (m *memory) renderStarted(req Request, render string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[req]
	switch {
	case !ok || render == "" || e.render != render:
		return false
	case e.changeSeq == 0:
		return true
	case e.renderRV != 0 && e.changeRV != unknownRV:
		return e.renderRV > e.changeRV
	}
	return e.renderSeq > e.changeSeq
}

// noteFirstSeen remembers hash as the first observed content of ref for a
// workload that has no baseline of it, unless one is remembered already.
func (m *memory) noteFirstSeen(req Request, ref, hash string) {
	m.with(req, func(e *entry) {
		if _, ok := e.firstSeen[ref]; ok {
			return
		}
		if e.firstSeen == nil {
			e.firstSeen = map[string]string{}
		}
		e.firstSeen[ref] = hash
	})
}

// noteFirstRender remembers a render baseline another writer removed,
// unless one is remembered already.
func (m *memory) noteFirstRender(req Request, value string) {
	m.with(req, func(e *entry) {
		if e.firstRender == "" {
			e.firstRender = value
		}
	})
}

// firstRender returns the render baseline another writer removed ("" when
// none is remembered).
func (m *memory) firstRender(req Request) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[req]; ok {
		return e.firstRender
	}
	return ""
}

// takeWritten returns and forgets the version of ref a baseline of the
// workload was written from ("" when none is remembered).
func (m *memory) takeWritten(req Request, ref string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[req]
	if !ok {
		return ""
	}
	v := e.written[ref]
	delete(e.written, ref)
	if len(e.written) == 0 {
		e.written = nil
	}
	if e.empty() {
		delete(m.entries, req)
	}
	return v
}

// firstSeen returns a copy of the first observed hashes of a workload's
// unrecorded external configs (nil when there are none).
func (m *memory) firstSeen(req Request) map[string]string {
	return copyOf(m, req, func(e *entry) map[string]string { return e.firstSeen })
}

// forget drops a workload that is gone or no longer managed.
func (m *memory) forget(req Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[req]; ok {
		m.countMissing(e.missing != "", false)
		delete(m.entries, req)
	}
}

func (m *memory) countMissing(before, after bool) {
	switch {
	case before && !after:
		m.missing--
	case !before && after:
		m.missing++
	}
}

// missingCount is the number of workloads waiting for a required config.
func (m *memory) missingCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.missing
}

// overlay returns copies of the dry-run annotations of a workload.
func (m *memory) overlay(req Request) (meta, tmpl map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[req]; ok {
		return maps.Clone(e.overlayMeta), maps.Clone(e.overlayTemplate)
	}
	return nil, nil
}
