package controller

import (
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/confighash/confighash/hashing"
)

// sortedKinds returns the kinds in name order, for deterministic mapping.
func (r *Reconciler) sortedKinds() []*workloadKind {
	names := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*workloadKind, len(names))
	for i, n := range names {
		out[i] = r.kinds[n]
	}
	return out
}

type queue = workqueue.TypedRateLimitingInterface[Request]

// configHandler maps ConfigMap or Secret events to the workloads that
// consume the object, through the index, and records which keys changed
// for the Event. A change of metadata only (no digest differs) is dropped
// here: it cannot change any hash.
func (r *Reconciler) configHandler(kind hashing.Kind) handler.TypedEventHandler[client.Object, Request] {
	return handler.TypedFuncs[client.Object, Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			if e.IsInInitialList {
				return // the workloads' own initial events reconcile everything
			}
			r.metrics.configEvents.WithLabelValues(string(kind), "created").Inc()
			r.enqueueConsumers(ctx, kind, e.Object, OpCreated, nil, transition{after: stateOf(e.Object)}, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			tr := transition{before: stateOf(e.ObjectOld), after: stateOf(e.ObjectNew)}
			changed := changedKeys(tr.before.content, tr.after.content)
			if tr.before.found && tr.after.found && len(changed) == 0 {
				r.metrics.configEvents.WithLabelValues(string(kind), "metadata").Inc()
				r.noteUnchanged(ctx, kind, e.ObjectNew, tr)
				return
			}
			r.metrics.configEvents.WithLabelValues(string(kind), "content").Inc()
			r.enqueueConsumers(ctx, kind, e.ObjectNew, OpChanged, changed, tr, q)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			r.metrics.configEvents.WithLabelValues(string(kind), "deleted").Inc()
			r.enqueueConsumers(ctx, kind, e.Object, OpDeleted, nil, transition{before: stateOf(e.Object)}, q)
		},
	}
}

// state is a config's content, resourceVersion and creation time; found is
// false when it does not exist (or cannot be read); pending is the key the
// cluster has yet to write into a config it fills in (FillPending), or "".
type state struct {
	content hashing.Content
	version string
	created time.Time
	found   bool
	pending string
}

// stateOf is the state of a config as an event or the cache gives it.
func stateOf(obj client.Object) state {
	c, err := ContentOf(obj)
	st := state{content: c, version: obj.GetResourceVersion(), created: obj.GetCreationTimestamp().Time, found: err == nil}
	if err == nil {
		st.pending = pendingOf(obj, c)
	}
	return st
}

// transition is a config's content before and after an event.
type transition struct {
	before, after state
}

// version is the resourceVersion the event was written at: the object's
// after it, or for a deletion the deleted object's (a watch delivers it
// with the version of the deletion).
func (tr transition) version() string {
	if tr.after.version == "" && !tr.after.found {
		return tr.before.version
	}
	return tr.after.version
}

// enqueueConsumers queues every managed workload in the object's namespace
// that consumes it, found through the consumer index and read from the
// cache (no API call; the index waits for the workload kinds' initial
// lists, so no consumer is missed at start-up). A consumer that has no
// baseline of the object yet remembers its hash from before the event (see
// firstSeen).
func (r *Reconciler) enqueueConsumers(ctx context.Context, kind hashing.Kind, obj client.Object, op Op, keys []string, tr transition, q queue) {
	ns := obj.GetNamespace()
	change := Change{Kind: kind, Namespace: ns, Name: obj.GetName(), UID: obj.GetUID(), Op: op, Keys: keys}
	ref := string(kind) + "/" + obj.GetName()
	cref := configRef{namespace: ns, name: obj.GetName(), secret: kind == hashing.KindSecret}
	for _, c := range r.consumers.consumers(ctx, cref) {
		o, err := r.workload(ctx, c.kind, client.ObjectKey{Namespace: ns, Name: c.name})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				r.log.Error(err, "reading a consumer from the cache", "config", ref, "namespace", ns, "kind", c.kind.Name, "name", c.name)
			}
			continue
		}
		if !slices.Contains(r.consumes(c.kind, o), cref) {
			continue // no longer a consumer: its own event re-indexes it
		}
		req := Request{Kind: c.kind.Name, Namespace: ns, Name: c.name}
		r.noteEvent(ctx, req, c.kind, o, ref, change, tr)
		q.Add(req)
	}
}

// noteUnchanged tells the consumers of obj, whose content the event tr
// left as it was (its metadata written), that its new resourceVersion is
// no change for a render noted at their creation (memory.noteUnchanged).
// Nothing is queued: no hash moved.
func (r *Reconciler) noteUnchanged(ctx context.Context, kind hashing.Kind, obj client.Object, tr transition) {
	ns, ref := obj.GetNamespace(), string(kind)+"/"+obj.GetName()
	for _, c := range r.consumers.consumers(ctx, configRef{namespace: ns, name: obj.GetName(), secret: kind == hashing.KindSecret}) {
		r.memory.noteUnchanged(Request{Kind: c.kind.Name, Namespace: ns, Name: c.name}, ref, tr.before.version, tr.after.version)
	}
}

// noteEvent remembers the change of config ref (the event tr) for one of
// its consumers, o: as a change (noteChange), held back or not, as the
// first observed content (noteFirstSeen), and as a required config going
// missing under running pods or coming back (noteLost).
func (r *Reconciler) noteEvent(ctx context.Context, req Request, kind *workloadKind, o client.Object, ref string, change Change, tr transition) {
	tmpl, err := kind.template(o)
	if err != nil || tmpl == nil {
		r.memory.noteChange(req, change, tr.version(), false)
		return
	}
	v := r.view(req, o, tmpl)
	lost := r.memory.lost(req)
	heldBack := sync.OnceValue(func() bool { return r.heldBack(ctx, req.Namespace, v, ref, tr, lost) })
	r.noteFirstSeen(req, v, ref, tr, heldBack)
	r.memory.noteChange(req, change, tr.version(), v.Managed && r.memory.rendering(req) && heldBack())
	r.noteLost(req, v, ref, tr, lost, heldBack)
}

// noteLost remembers a config the pods of the workload seen as v require,
// ref, that the event tr made missing while nothing else they require was:
// pods that ran before keep running without it, on the content they read,
// so a change seen until it is back is one they have not read (heldBack
// passes over it). It forgets ref once the config is back, and remembers
// that creation for a while: the pods did not start then, so an optional
// config created with it did not land with them (Landed). A config that
// goes missing while another one already is changes nothing: no pod can
// have run then.
func (r *Reconciler) noteLost(req Request, v View, ref string, tr transition, lost map[string]bool, heldBack func() bool) {
	if !v.Managed {
		return
	}
	var was, is bool
	for _, u := range v.Uses {
		if u.Ref() == ref {
			was = was || len(v.Missing(u, tr.before.content, tr.before.found, tr.before.pending)) > 0
			is = is || len(v.Missing(u, tr.after.content, tr.after.found, tr.after.pending)) > 0
		}
	}
	switch {
	case is && !was && !lost[ref] && !heldBack():
		r.memory.noteLost(req, ref)
	case !is && lost[ref]:
		r.memory.noteBack(req, ref, tr.after.created, r.now().Add(r.opts.CoalesceWindow+backHold))
	}
}

// backHold is how long, beyond the coalescing window, the creation of a
// required config that comes back under running pods is remembered
// (entry.back): long enough for the events of the configs created with it
// to be handled.
const backHold = 5 * time.Second

// heldBack reports whether no pod of the workload seen as v can have run
// when the event tr on config ref of namespace ns landed: a config its
// pods require did not exist then, lacked a key they require, or was a
// ServiceAccount token Secret without its token yet. For ref that is its
// content before the event; for the others, their content in the cache,
// which is at or after the event, so a config missing there was missing
// when it landed too. A config in lost does not count: this process saw
// it go missing under pods that may be running (noteLost).
func (r *Reconciler) heldBack(ctx context.Context, ns string, v View, ref string, tr transition, lost map[string]bool) bool {
	for _, u := range v.Uses {
		if u.Ref() == ref && !lost[ref] && len(v.Missing(u, tr.before.content, tr.before.found, tr.before.pending)) > 0 {
			return true
		}
	}
	for _, u := range v.Uses {
		if u.Ref() == ref || lost[u.Ref()] {
			continue
		}
		if st, err := r.content(ctx, ns, u.Kind, u.Name); err == nil && len(v.Missing(u, st.content, st.found, st.pending)) > 0 {
			return true
		}
	}
	return false
}

// noteFirstSeen remembers, for a consumer of the external config ref, the
// config's hash before this event, the content its pods run (the first
// observation wins), when the consumer has no baseline of ref yet, or when
// this process wrote its baseline from the content after this event: read
// from the cache between the edit landing there and this handler running,
// that baseline absorbed the edit. A required config that did not exist,
// lacked a key the pods require, or was a ServiceAccount token Secret
// without its token yet, is not remembered: pods cannot have started on
// it, so what comes next is the first content they see. Nor is any config
// while another one the pods require is missing in the cache: no pod of
// the template can have started then (a Deployment applied before its
// Secrets, its pull Secret created before the token Secret it reads).
func (r *Reconciler) noteFirstSeen(req Request, v View, ref string, tr transition, heldBack func() bool) {
	absorbed := r.memory.takeWritten(req, ref) == tr.after.version && tr.after.found
	if !v.Managed || !v.External[ref] {
		return
	}
	baseline, keyID, uses := ParseBaseline(v.Baseline)
	if _, recorded := baseline[ref]; recorded && keyID == r.keyID && sameUses(uses, v.UsesPrint) && !absorbed {
		return // recorded before the edit: the edit is compared with it
	}
	// Read only here, where something would be remembered.
	if heldBack() {
		return
	}
	lookup := func(hashing.Kind, string) (hashing.Content, bool) { return tr.before.content, tr.before.found }
	for ref, h := range r.externalHashes(req.Namespace, v, ref, lookup) {
		r.memory.noteFirstSeen(req, ref, h)
	}
}

// workloadHandler keeps the consumer index and queues a managed workload
// when it appears, when its spec or annotations change, and on resyncs;
// status-only updates and workloads nobody opted in are dropped (one that
// opts out is queued once, to be forgotten). The index is updated before
// the workload is queued.
func (r *Reconciler) workloadHandler(kind *workloadKind) handler.TypedEventHandler[client.Object, Request] {
	req := func(o client.Object) Request {
		return Request{Kind: kind.Name, Namespace: o.GetNamespace(), Name: o.GetName()}
	}
	return handler.TypedFuncs[client.Object, Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			cur := r.consumes(kind, e.Object)
			r.consumers.update(consumer{kind: kind, name: e.Object.GetName()}, nil, cur)
			if cur == nil {
				return
			}
			// Created while watched (kubectl replace --force, a workload
			// deleted and applied again): its pods start on the live
			// content, as after a template change.
			if h := r.renderHashOf(kind, e.Object); h != "" && !e.IsInInitialList {
				r.memory.noteCreated(req(e.Object), h, e.Object.GetResourceVersion())
			}
			q.Add(req(e.Object))
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			o, n := e.ObjectOld, e.ObjectNew
			changed := o.GetGeneration() != n.GetGeneration() || !maps.Equal(o.GetAnnotations(), n.GetAnnotations())
			if !changed && o.GetResourceVersion() != n.GetResourceVersion() {
				return // status only: nothing the controller reads
			}
			old, cur := r.consumes(kind, o), r.consumes(kind, n)
			r.consumers.update(consumer{kind: kind, name: n.GetName()}, old, cur)
			if h := r.renderTaken(kind, o, n); h != "" {
				r.memory.noteRender(req(n), h, n.GetResourceVersion())
			}
			r.noteBaselineRemoved(req(n), kind, o, n)
			if cur != nil || old != nil {
				q.Add(req(n))
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], _ queue) {
			r.consumers.update(consumer{kind: kind, name: e.Object.GetName()}, r.consumes(kind, e.Object), nil)
			r.forget(req(e.Object))
		},
	}
}

// renderTaken returns the render-time hash of the workload's pod template
// when an update made the template take it, "" otherwise: a new hash, or
// the same one with a pod spec that consumes other configs or keys (a new
// render that adds a pull Secret outside it). Either changed the template,
// whose pods read the configs as they are from then on; the controller's
// record, made for other uses, no longer says what they read.
func (r *Reconciler) renderTaken(kind *workloadKind, o, n client.Object) string {
	h := r.renderHashOf(kind, n)
	if h == "" || h != r.renderHashOf(kind, o) {
		return h
	}
	ot, nt, ok := templates(kind, o, n)
	if !ok || equality.Semantic.DeepEqual(ot.Spec, nt.Spec) {
		return ""
	}
	if inspect(o.GetNamespace(), o.GetAnnotations(), ot, r.keys, r.keyID).UsesPrint ==
		inspect(n.GetNamespace(), n.GetAnnotations(), nt, r.keys, r.keyID).UsesPrint {
		return ""
	}
	return h
}

// noteBaselineRemoved keeps what the external baseline and the render
// baseline said when an update removed them (or replaced the external one
// with one made under another HMAC key) and left the pod template as
// it was (another writer of the workload that writes its own annotations
// over the workload's): the pods still run what they named, so they stand
// as first seen, and an edit made before the removal is rolled rather than
// recorded as the new baseline, while content the pods already read rolls
// nothing. An update that changed the pod template too restarted the pods
// on the live content: nothing is kept.
func (r *Reconciler) noteBaselineRemoved(req Request, kind *workloadKind, o, n client.Object) {
	removed := func(key string) (string, bool) {
		old, had := o.GetAnnotations()[key]
		_, has := n.GetAnnotations()[key]
		return old, had && !has
	}
	old, baselineRemoved := removed(r.keys.baseline)
	if cur, has := n.GetAnnotations()[r.keys.baseline]; has && cur != old && old != "" {
		// Replaced by a baseline this process cannot compare (a second
		// controller of the same prefix with another HMAC key writes its
		// own there): what this process wrote is lost to it as much as
		// when removed.
		_, curKeyID, _ := ParseBaseline(cur)
		baselineRemoved = curKeyID != r.keyID
	}
	render, renderRemoved := removed(r.keys.renderBaseline)
	if !baselineRemoved && !renderRemoved {
		return
	}
	ot, nt, ok := templates(kind, o, n)
	if !ok || !equality.Semantic.DeepEqual(ot, nt) {
		return
	}
	if renderRemoved {
		r.memory.noteFirstRender(req, render)
	}
	if !baselineRemoved {
		return
	}
	baseline, keyID, uses := ParseBaseline(old)
	v := r.view(req, n, nt)
	if !v.Managed || keyID != r.keyID || !sameUses(uses, v.UsesPrint) {
		return
	}
	for ref, h := range baseline {
		if v.External[ref] {
			r.memory.noteFirstSeen(req, ref, h)
		}
	}
}

// templates returns the pod templates of an update's old and new object;
// ok is false when either cannot be read.
func templates(kind *workloadKind, o, n client.Object) (ot, nt *corev1.PodTemplateSpec, ok bool) {
	ot, oerr := kind.template(o)
	nt, nerr := kind.template(n)
	return ot, nt, oerr == nil && nerr == nil && ot != nil && nt != nil
}

// renderHashOf is the render-time hash on a workload's pod template, empty
// when it carries none.
func (r *Reconciler) renderHashOf(kind *workloadKind, o client.Object) string {
	tmpl, err := kind.template(o)
	if err != nil || tmpl == nil {
		return ""
	}
	return tmpl.Annotations[r.keys.hash]
}
