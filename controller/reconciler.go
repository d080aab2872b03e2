package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/confighash/confighash/hashing"
)

// conflictRetry is how soon a roll is retried after the workload changed
// under it (a status update, a new render): the cache catches up first.
const conflictRetry = 100 * time.Millisecond

// writeTimeout bounds one patch of a workload, which is not cancelled with
// the reconcile (see send).
const writeTimeout = 10 * time.Second

// dryRunRecheck is when a dry run looks again after a write it only
// pretended to make (a real write would trigger a workload event).
const dryRunRecheck = 10 * time.Millisecond

// EventRecorder is the part of the events.k8s.io recorder the controller
// uses.
type EventRecorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// Outcome is what one reconcile did, reported to Options.Observer.
type Outcome struct {
	Request Request
	// Result is the metric label: in_sync, rolled, would_roll (dry run),
	// waiting, baseline_recorded, missing_config, unmanaged, gone or error.
	Result string
	// Input is what the decision was made from (live hashes included).
	Input    Input
	Decision Decision
	// ConfigVersions is the resourceVersion of each consumed config read, by
	// Kind/name ("" when absent).
	ConfigVersions map[string]string
	RequeueAfter   time.Duration
	Err            error
}

// Reconciler decides, per workload, whether to roll it, and does so. It
// reads workloads, ConfigMaps and Secrets from the cache and writes one
// merge patch per roll.
type Reconciler struct {
	reader   client.Reader
	writer   client.Writer
	recorder EventRecorder
	kinds    map[string]*workloadKind
	keys     keys
	keyID    string // hashing.KeyID of the HMAC key, empty without one
	opts     Options
	metrics  *metrics
	memory   *memory
	// consumers indexes the managed workloads by the configs they consume.
	consumers *consumerIndex
	// stores reads the cached workloads (nil: through reader only).
	stores  *stores
	limiter *rate.Limiter
	now     func() time.Time
	log     logr.Logger
	// active counts the reconciles running, for the Event flush at the
	// end of the process.
	active atomic.Int64
}

// newReconciler wires a reconciler; kinds are the workload kinds served.
func newReconciler(reader client.Reader, writer client.Writer, rec EventRecorder, kinds []*workloadKind, m *metrics, opts Options, log logr.Logger) *Reconciler {
	r := &Reconciler{
		reader: reader, writer: writer, recorder: rec,
		kinds: map[string]*workloadKind{}, keys: newKeys(opts.AnnotationPrefix), keyID: hashing.KeyID(opts.Key), opts: opts,
		metrics: m, memory: newMemory(), consumers: newConsumerIndex(kinds), limiter: rate.NewLimiter(rate.Limit(opts.RolloutsPerSecond), opts.RolloutBurst),
		now: time.Now, log: log, stores: opts.stores,
	}
	for _, k := range kinds {
		r.kinds[k.Name] = k
	}
	return r
}

// Reconcile implements reconcile.TypedReconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req Request) (reconcile.Result, error) {
	r.active.Add(1)
	defer r.active.Add(-1)
	start := time.Now()
	out := Outcome{Request: req}
	res, err := r.reconcile(ctx, req, &out)
	if err != nil {
		out.Result, out.Err = "error", err
	}
	// A creation remembered in entry.back goes once its time is up: come
	// back then to forget it.
	if err == nil {
		now := r.now()
		if until := r.memory.expireBack(req, now); !until.IsZero() && (res.RequeueAfter == 0 || until.Sub(now) < res.RequeueAfter) {
			res.RequeueAfter = max(until.Sub(now), time.Millisecond)
		}
	}
	out.RequeueAfter = res.RequeueAfter
	r.metrics.duration.WithLabelValues(req.Kind).Observe(time.Since(start).Seconds())
	r.metrics.reconciles.WithLabelValues(req.Kind, out.Result).Inc()
	r.metrics.missing.Set(float64(r.memory.missingCount()))
	if r.opts.Observer != nil {
		r.opts.Observer(out)
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req Request, out *Outcome) (reconcile.Result, error) {
	kind, ok := r.kinds[req.Kind]
	if !ok {
		out.Result = "unmanaged"
		return reconcile.Result{}, nil
	}
	obj, err := r.workload(ctx, kind, types.NamespacedName{Namespace: req.Namespace, Name: req.Name})
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req)
			out.Result = "gone"
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading %s: %w", req, err)
	}
	tmpl, err := kind.template(obj)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	v := r.view(req, obj, tmpl)
	if !v.Managed {
		r.forget(req)
		out.Result = "unmanaged"
		return reconcile.Result{}, nil
	}
	log := logr.FromContextOrDiscard(ctx)
	if v.Mismatch != "" && r.unknownRenderHash(req, kind, obj, tmpl, v, log) {
		out.Result = "unmanaged"
		return reconcile.Result{}, nil
	}
	in, versions, err := r.observe(ctx, req, v, obj.GetCreationTimestamp().Time)
	if err != nil {
		return reconcile.Result{}, err
	}
	d := Decide(in)
	out.Input, out.Decision, out.ConfigVersions = in, d, versions
	switch d.Action {
	case ActionBlocked:
		out.Result = "missing_config"
		return r.blocked(req, kind, obj, d, log), nil
	case ActionRecordBaseline:
		return r.recordBaseline(ctx, req, kind, obj, d, out, log)
	case ActionRoll:
		return r.roll(ctx, req, kind, obj, v, d, out, log)
	default:
		now := r.now()
		r.memory.with(req, func(e *entry) {
			e.settle()
			e.firstSeen, e.firstRender = nil, ""
			e.forgetRender(in.RawRenderHash)
			if now.Sub(e.lastBaseline) >= r.opts.MinRollInterval {
				e.forgetBaselines()
			}
		})
		out.Result = "in_sync"
	}
	return reconcile.Result{}, nil
}

// unknownRenderHash says, once per workload, why its render-time hash
// cannot be compared (in the log; a Warning Event when the cause is the
// HMAC key), and reports whether to leave the workload alone: a controller
// without a key does so for a keyed render, as every record it wrote would
// hold plain hashes (of a Secret alone, in the external baseline), which
// the render was keyed to keep from readers of the workload. Neither names
// a key, only key ids.
func (r *Reconciler) unknownRenderHash(req Request, kind *workloadKind, obj client.Object, tmpl *corev1.PodTemplateSpec, v View, log logr.Logger) (leaveAlone bool) {
	leaveAlone = v.Mismatch == hashing.MismatchKeyed
	var first bool
	r.memory.with(req, func(e *entry) {
		first = !e.warnedUnknown
		if leaveAlone {
			*e = entry{}
		}
		e.warnedUnknown = true
	})
	if !first {
		return leaveAlone
	}
	var event string
	var renderKeyID string
	if tmpl != nil {
		renderKeyID = tmpl.Annotations[r.keys.keyID]
	}
	switch {
	case leaveAlone:
		log.Info("render-time hash made with an HMAC key the controller was not given; leaving the workload alone, " +
			"as its records would hold plain hashes of the configs (give the controller the render's key with --hmac-key-file)")
		event = "the render-time hash was made with an HMAC key" + keyIDSuffix(renderKeyID) + " and the controller has none: " +
			"the workload is left alone until the controller is given the render's key"
	case v.Mismatch == hashing.MismatchOtherKey:
		log.Info("render-time hash made with another HMAC key; treating every config as external (give the controller the render's key)",
			"renderKeyID", v.OtherKeyID, "controllerKeyID", r.keyID)
		event = "the render-time hash was made with another HMAC key (key-id " + v.OtherKeyID + ", the controller's is " + r.keyID + "): " +
			"every config is treated as external until the controller is given the render's key"
	case v.Mismatch == hashing.MismatchUnkeyed:
		log.Info("render-time hash made without an HMAC key, and the controller has one; treating every config as external (render with the controller's key)")
		event = "the render-time hash was made without an HMAC key and the controller has one (key-id " + r.keyID + "): " +
			"every config is treated as external until the render uses the controller's key"
	default:
		log.Info("render-time hash of an unknown version or mode; treating every config as external", "hash", v.RawRenderHash)
	}
	if event != "" && !r.opts.DryRun {
		r.recorder.Eventf(shell(kind, obj), nil, corev1.EventTypeWarning, EventReasonHMACKeyMismatch, EventActionWait, "%s", event)
	}
	return leaveAlone
}

// keyIDSuffix is " (key-id id)", or nothing without an id.
func keyIDSuffix(id string) string {
	if id == "" {
		return ""
	}
	return " (key-id " + id + ")"
}

// forget drops what the controller remembers of a workload that is gone or
// no longer managed, and sets the missing-config gauge at once: a workload
// deleted while held back by a missing config (or its namespace deleted)
// waits for nothing any more, and no other reconcile may come to say so.
func (r *Reconciler) forget(req Request) {
	r.memory.forget(req)
	r.metrics.missing.Set(float64(r.memory.missingCount()))
}

// view inspects a workload, with the dry-run overlay applied.
func (r *Reconciler) view(req Request, obj client.Object, tmpl *corev1.PodTemplateSpec) View {
	meta := obj.GetAnnotations()
	if r.opts.DryRun && tmpl != nil {
		om, ot := r.memory.overlay(req)
		meta = merged(meta, om)
		t := *tmpl
		t.Annotations = merged(tmpl.Annotations, ot)
		tmpl = &t
	}
	return inspect(req.Namespace, meta, tmpl, r.keys, r.keyID)
}

// merged returns base with the entries of over laid on it: base itself when
// over is empty, else a copy, so neither map changes.
func merged(base, over map[string]string) map[string]string {
	if len(over) == 0 {
		return base
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}

// observe reads the consumed configs from the cache and computes the live
// hashes Decide compares; created is the workload's creation time.
func (r *Reconciler) observe(ctx context.Context, req Request, v View, created time.Time) (Input, map[string]string, error) {
	ns := req.Namespace
	contents := map[string]hashing.Content{}
	versions := map[string]string{}
	createdAt := map[string]time.Time{}
	in := Input{
		RenderHash: v.RenderHash, RawRenderHash: v.RawRenderHash,
		ControllerHash: v.ControllerHash, ControllerBase: v.ControllerBase,
		KeyID: r.keyID, ControllerKeyID: v.ControllerKeyID,
		Uses: v.UsesPrint, ControllerUses: v.ControllerUses,
		RenderBaseline: v.RenderBaseline, RenderStarted: r.memory.renderStarted(req, v.RawRenderHash),
	}
	in.Baseline, in.BaselineKeyID, in.BaselineUses = ParseBaseline(v.Baseline)
	for _, u := range v.Uses {
		st, err := r.content(ctx, ns, u.Kind, u.Name)
		if err != nil {
			return in, nil, err
		}
		versions[u.Ref()] = st.version
		if st.found {
			contents[u.Ref()] = st.content
			createdAt[u.Ref()] = st.created
		}
		in.Missing = append(in.Missing, v.Missing(u, st.content, st.found, st.pending)...)
	}
	// A workload created while this process watched started its pods on the
	// configs as they were written then; one written since (its event may
	// come before the workload's, when the index did not know the workload
	// yet) may not have been read.
	if created, held := r.memory.createdAt(req, v.RawRenderHash); created != 0 {
		for ref, version := range versions {
			if n := parseRV(version); version != "" && version != held[ref] && (n == 0 || n > created) {
				in.RenderStarted = false
			}
		}
	}
	lookup := func(kind hashing.Kind, name string) (hashing.Content, bool) {
		c, ok := contents[string(kind)+"/"+name]
		return c, ok
	}
	hopts := hashing.Options{Key: r.opts.Key}
	var inStream []hashing.Use
	for _, u := range v.Uses {
		if !v.External[u.Ref()] {
			inStream = append(inStream, u)
		}
	}
	in.LiveExternal = r.externalHashes(ns, v, "", lookup)
	in.LiveIn = hashing.Compute(ns, inStream, lookup, hopts)
	if in.RenderHash != "" && in.LiveIn != in.RenderHash {
		in.LiveInUnnamespaced = hashing.Compute("", inStream, lookup, hopts)
	}
	in.LiveAll = hashing.Compute(ns, v.Uses, lookup, hopts)
	in.FirstSeen = r.memory.firstSeen(req)
	in.FirstSeenRender = ParseRenderBaseline(r.memory.firstRender(req), v.RawRenderHash)
	// A required config created again under running pods does not say
	// that they just started.
	for ref, t := range r.memory.back(req) {
		if createdAt[ref].Equal(t) {
			delete(createdAt, ref)
		}
	}
	in.Landed = Landed(ns, v, created, createdAt, r.opts.Key)
	return in, versions, nil
}

// externalHashes is the hash of each external use of a workload, by
// Kind/name, from the contents lookup gives; only of ref when ref is not
// empty.
func (r *Reconciler) externalHashes(ns string, v View, ref string, lookup func(hashing.Kind, string) (hashing.Content, bool)) map[string]string {
	out := map[string]string{}
	for _, u := range v.Uses {
		if v.External[u.Ref()] && (ref == "" || u.Ref() == ref) {
			out[u.Ref()] = hashing.Compute(ns, []hashing.Use{u}, lookup, hashing.Options{Key: r.opts.Key})
		}
	}
	return out
}

// workload reads a workload from the cache: the cache's own object (its
// cached form, see TransformWorkload), not a copy, so never changed here.
func (r *Reconciler) workload(ctx context.Context, kind *workloadKind, key types.NamespacedName) (client.Object, error) {
	return r.cached(ctx, kind.newObject(), kind.Name, key)
}

// cached reads the object of like's type at key from the cache: from the
// informers' stores when the cache is the controller's own (its cached
// types, the cache's object itself, never to be changed), else through
// the reader, into like.
func (r *Reconciler) cached(ctx context.Context, like client.Object, kind string, key types.NamespacedName) (client.Object, error) {
	if r.stores != nil {
		obj, ok, known, err := r.stores.get(like, key)
		switch {
		case !known:
		case err != nil:
			return nil, fmt.Errorf("reading %s %s from the cache: %w", kind, key, err)
		case !ok:
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: kind}, key.Name)
		default:
			o, isObj := obj.(client.Object)
			if !isObj {
				return nil, fmt.Errorf("%s %s: the cache holds a %T", kind, key, obj)
			}
			return o, nil
		}
	}
	if err := r.reader.Get(ctx, key, like); err != nil {
		return nil, err
	}
	return like, nil
}

// shell is an object of kind naming obj (name, namespace, UID,
// resourceVersion) for what needs the API type and must not change the
// cached object: a patch (the client decodes the answer into it) and an
// Event.
func shell(kind *workloadKind, obj client.Object) client.Object {
	o := kind.newObject()
	o.SetName(obj.GetName())
	o.SetNamespace(obj.GetNamespace())
	o.SetUID(obj.GetUID())
	o.SetResourceVersion(obj.GetResourceVersion())
	return o
}

// content reads one config from the cache.
func (r *Reconciler) content(ctx context.Context, ns string, kind hashing.Kind, name string) (state, error) {
	var like client.Object = &corev1.ConfigMap{}
	if kind == hashing.KindSecret {
		like = &corev1.Secret{}
	}
	obj, err := r.cached(ctx, like, string(kind), types.NamespacedName{Namespace: ns, Name: name})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return state{}, nil
		}
		return state{}, fmt.Errorf("reading %s %s/%s: %w", kind, ns, name, err)
	}
	c, err := ContentOf(obj)
	if err != nil {
		return state{}, err
	}
	return state{content: c, version: obj.GetResourceVersion(), created: obj.GetCreationTimestamp().Time, found: true, pending: pendingOf(obj, c)}, nil
}

// blocked holds a workload back while a required config is missing. It
// warns once per set of missing configs, after the coalescing window, so a
// config applied a moment after its workload raises no alarm.
func (r *Reconciler) blocked(req Request, kind *workloadKind, obj client.Object, d Decision, log logr.Logger) reconcile.Result {
	key := strings.Join(d.Missing, ",")
	now := r.now()
	var wait time.Duration
	warn := false
	r.memory.with(req, func(e *entry) {
		e.firstMismatch = time.Time{}
		if e.missingSince.IsZero() || e.missingSet != key {
			e.missingSince, e.missingSet = now, key
		}
		wait = e.missingSince.Add(r.opts.CoalesceWindow).Sub(now)
		if wait <= 0 && e.missing != key {
			e.missing, warn = key, true
		}
	})
	r.metrics.skipped.WithLabelValues(req.Kind, "missing_config").Inc()
	if wait > 0 {
		return reconcile.Result{RequeueAfter: wait}
	}
	if warn {
		log.Info("required config missing; not rolling", "missing", d.Missing)
		if !r.opts.DryRun {
			r.recorder.Eventf(shell(kind, obj), missingRelated(d.Missing, req.Namespace), corev1.EventTypeWarning, EventReasonConfigMissing, EventActionWait, "%s", missingMessage(d.Missing, req.Namespace))
		}
	}
	return reconcile.Result{}
}

// recordBaseline writes the external baseline on the workload metadata.
func (r *Reconciler) recordBaseline(ctx context.Context, req Request, kind *workloadKind, obj client.Object, d Decision, out *Outcome, log logr.Logger) (reconcile.Result, error) {
	if d.Reason == ReasonRenderStarted {
		// The render may still be landing (its Deployment applied before
		// its ConfigMap): the mismatch must last the coalescing window, as
		// for a roll, before the live content is recorded as what the
		// render's pods read.
		now := r.now()
		var wait time.Duration
		r.memory.with(req, func(e *entry) {
			if e.firstMismatch.IsZero() {
				e.firstMismatch = now
			}
			wait, _ = Wait(now, e.firstMismatch, time.Time{}, r.opts.CoalesceWindow, 0)
		})
		if wait > 0 {
			out.Result = "waiting"
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	if wait := r.baselineRemoved(req, kind, obj, d.Record, log); wait > 0 {
		out.Result = "waiting"
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	r.memory.with(req, func(e *entry) { e.settle(); e.forgetRender(out.Input.RawRenderHash) })
	if r.opts.DryRun {
		r.memory.with(req, func(e *entry) {
			e.overlayMeta, e.firstSeen, e.firstRender = map[string]string{r.keys.baseline: d.Record.Baseline, r.keys.renderBaseline: d.Record.RenderBaseline}, nil, ""
		})
		out.Result = "baseline_recorded"
		return reconcile.Result{RequeueAfter: dryRunRecheck}, nil
	}
	patch := r.patch(kind, obj, Record{Baseline: d.Record.Baseline, RenderBaseline: d.Record.RenderBaseline}, false)
	if res, done, err := r.send(ctx, req, shell(kind, obj), patch, out); done {
		return res, err
	}
	// The configs recorded for the first time, and the versions read.
	written := map[string]string{}
	in := out.Input
	for ref := range in.LiveExternal {
		if _, had := in.Baseline[ref]; had && in.BaselineComparable() {
			continue
		}
		if rv := out.ConfigVersions[ref]; rv != "" {
			written[ref] = rv
		}
	}
	now := r.now()
	r.memory.with(req, func(e *entry) {
		e.firstSeen, e.firstRender, e.written = nil, "", written
		if r.opts.MinRollInterval > 0 {
			e.wroteBaselines(now, d.Record)
		}
	})
	r.metrics.baselines.WithLabelValues(req.Kind).Inc()
	if d.Reason == ReasonRenderStarted {
		log.V(1).Info("recorded the render baseline: the render's rollout read in-stream content the render does not hold", "render", d.Record.RenderBaseline)
	} else {
		log.V(1).Info("recorded the external baseline", "external", d.Record.Baseline)
	}
	out.Result = "baseline_recorded"
	// Reconciled again once the interval is over, to forget the write.
	return reconcile.Result{RequeueAfter: r.opts.MinRollInterval}, nil
}

// baselineRemoved returns how long to hold back the baselines of rec
// because another writer of the workload removed or replaced one that this
// process wrote less than --min-roll-interval ago and rec writes again: the
// annotation no longer holds what this process wrote, nor what it would
// write. An operator that writes its own annotations over the workload's
// every time it reconciles removes them (both, or one); a second
// confighash controller of the same prefix with another HMAC key replaces
// the external baseline with its own. Without the hold the two would
// write the workload against each other, each write of the controller's
// copied onto the Deployment's ReplicaSet, for as long as both run. The
// first hold after a write logs and writes a Warning Event. An external
// config edited meanwhile is still rolled: its hash as this process first
// saw it stands in for the missing baseline.
func (r *Reconciler) baselineRemoved(req Request, kind *workloadKind, obj client.Object, rec Record, log logr.Logger) time.Duration {
	if r.opts.DryRun || r.opts.MinRollInterval <= 0 {
		return 0
	}
	ann := obj.GetAnnotations()
	now := r.now()
	var wait, ago time.Duration
	var taken []string
	first, replaced := false, false
	r.memory.with(req, func(e *entry) {
		if e.lastBaseline.IsZero() {
			return
		}
		if taken, replaced = r.keys.taken(ann, e.wroteBaseline, e.wroteRender, rec); len(taken) == 0 {
			return
		}
		ago = now.Sub(e.lastBaseline)
		wait = r.opts.MinRollInterval - ago
		if wait > 0 && !e.heldBaseline {
			e.heldBaseline, first = true, true
		}
	})
	if first {
		what, advice := "removed", "let the workload's owner keep the "+r.opts.AnnotationPrefix+"/ annotations (an update of what it read, or server-side apply), or opt the workload out"
		if replaced {
			what, advice = "replaced", "run one confighash controller per annotation prefix (one with another HMAC key writes its own baselines there), or "+advice
		}
		msg := fmt.Sprintf("another writer of the workload %s the baseline the controller wrote on it %s ago (%s); "+
			"writing it again at most every %s (--min-roll-interval): %s",
			what, ago.Round(time.Millisecond), strings.Join(taken, ", "), r.opts.MinRollInterval, advice)
		log.Info("baseline removed or replaced by another writer; holding it back", "wait", wait, "annotations", taken)
		r.recorder.Eventf(shell(kind, obj), nil, corev1.EventTypeWarning, EventReasonBaselineRemoved, EventActionWait, "%s", msg)
	}
	return wait
}

// taken lists the baseline annotations another writer took from the
// workload whose annotations are ann: this process wrote one
// (wroteBaseline, wroteRender), rec writes it again, and it holds neither
// value. replaced says that one of them holds another value (not removed).
func (k keys) taken(ann map[string]string, wroteBaseline, wroteRender string, rec Record) (taken []string, replaced bool) {
	for _, b := range [...]struct{ key, wrote, want string }{
		{k.baseline, wroteBaseline, rec.Baseline},
		{k.renderBaseline, wroteRender, rec.RenderBaseline},
	} {
		if cur, has := ann[b.key]; b.wrote != "" && b.want != "" && cur != b.wrote && cur != b.want {
			taken, replaced = append(taken, b.key), replaced || has
		}
	}
	return taken, replaced
}

// roll waits out the coalescing window, the per-workload interval and the
// global rate, then patches the pod template.
func (r *Reconciler) roll(ctx context.Context, req Request, kind *workloadKind, obj client.Object, v View, d Decision, out *Outcome, log logr.Logger) (reconcile.Result, error) {
	now := r.now()
	var wait time.Duration
	var why Reason
	r.memory.with(req, func(e *entry) {
		e.clearMissing()
		if e.firstMismatch.IsZero() {
			e.firstMismatch = now
		}
		wait, why = Wait(now, e.firstMismatch, e.lastRoll, r.opts.CoalesceWindow, r.opts.MinRollInterval)
	})
	if wait > 0 {
		r.metrics.skipped.WithLabelValues(req.Kind, metricLabel(why)).Inc()
		out.Result = "waiting"
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if !r.opts.DryRun {
		res := r.limiter.ReserveN(now, 1)
		if delay := res.DelayFrom(now); delay > 0 {
			res.CancelAt(now)
			r.metrics.skipped.WithLabelValues(req.Kind, "rate_limited").Inc()
			out.Result = "waiting"
			return reconcile.Result{RequeueAfter: delay}, nil
		}
		if res, done, err := r.send(ctx, req, shell(kind, obj), r.patch(kind, obj, d.Record, true), out); done {
			return res, err
		}
	}
	var changes []Change
	r.memory.with(req, func(e *entry) {
		changes = e.changes
		// The roll restarts the pods on the live content: nothing absorbed.
		e.lastRoll, e.firstMismatch, e.changes, e.firstSeen, e.firstRender, e.written = now, time.Time{}, nil, nil, "", nil
		e.forgetRender(v.RawRenderHash)
		if !r.opts.DryRun && r.opts.MinRollInterval > 0 {
			// The roll wrote the external baseline and removed the render
			// baseline.
			e.wroteBaselines(now, Record{Baseline: d.Record.Baseline})
		}
		if r.opts.DryRun {
			e.overlayMeta = map[string]string{r.keys.baseline: d.Record.Baseline, r.keys.renderBaseline: ""}
			e.overlayTemplate = map[string]string{r.keys.controllerHash: d.Record.ControllerHash, r.keys.controllerBase: d.Record.ControllerBase,
				r.keys.controllerKeyID: d.Record.KeyID, r.keys.controllerUses: d.Record.Uses}
		}
	})
	msg := rollMessage(changes, v.Uses, d, req.Namespace)
	if r.opts.DryRun {
		r.metrics.rollouts.WithLabelValues(req.Kind, "true").Inc()
		out.Result = "would_roll"
		log.Info("dry run: would roll", "reason", d.Reason, "message", strings.TrimSuffix(msg, "; rolling"))
		return reconcile.Result{RequeueAfter: dryRunRecheck}, nil
	}
	r.metrics.rollouts.WithLabelValues(req.Kind, "false").Inc()
	out.Result = "rolled"
	log.Info("rolled", "reason", d.Reason, "message", msg, "controllerHash", d.Record.ControllerHash)
	r.recorder.Eventf(shell(kind, obj), relatedObject(changes, v.Uses), corev1.EventTypeNormal, EventReasonConfigChanged, EventActionRollout, "%s", msg)
	return reconcile.Result{}, nil
}

// send applies a patch. done is true when the caller should return res and
// err: the workload changed under the controller (retry soon) or is gone.
//
// The patch is not cancelled with the reconcile. When the process is told to
// stop (SIGTERM, as at each rolling update of the controller), the manager
// cancels the workers' context and waits for them before it releases the
// Lease: a patch cancelled in flight may have been applied by the API server
// all the same, and its roll then went without its log line, count and
// Event, reported as a "Reconciler error" (context canceled) instead. It
// completes, bounded by writeTimeout.
func (r *Reconciler) send(ctx context.Context, req Request, obj client.Object, patch []byte, out *Outcome) (reconcile.Result, bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	err := r.writer.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(r.opts.FieldManager))
	switch {
	case err == nil:
		return reconcile.Result{}, false, nil
	case apierrors.IsConflict(err):
		r.metrics.skipped.WithLabelValues(req.Kind, "conflict").Inc()
		out.Result = "waiting"
		return reconcile.Result{RequeueAfter: conflictRetry}, true, nil
	case apierrors.IsNotFound(err):
		r.forget(req)
		out.Result = "gone"
		return reconcile.Result{}, true, nil
	case apierrors.IsForbidden(err):
		// Where users look (kubectl describe), not only in the logs. The
		// note is the same at every retry, so the recorder counts repeats
		// in one Event's series.
		r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonPatchForbidden, EventActionRollout,
			"%s; not rolling until the controller may patch it (config/clusterrole.yaml, config/namespaced/role.yaml)", err)
	}
	return reconcile.Result{}, true, fmt.Errorf("patching %s: %w", req, err)
}

// patch builds the merge patch of a record: the baseline on the workload
// metadata, and for a roll the controller's hash and base on the pod
// template. The resourceVersion makes it conditional: if the workload
// changed since the cache read (a new render applied meanwhile), the API
// server refuses it and the controller decides again.
func (r *Reconciler) patch(kind *workloadKind, obj client.Object, rec Record, roll bool) []byte {
	meta := map[string]any{"resourceVersion": obj.GetResourceVersion()}
	metaAnn := map[string]any{}
	if rec.Baseline != "" {
		metaAnn[r.keys.baseline] = rec.Baseline
	} else if _, has := obj.GetAnnotations()[r.keys.baseline]; has {
		metaAnn[r.keys.baseline] = nil
	}
	if rec.RenderBaseline != "" {
		metaAnn[r.keys.renderBaseline] = rec.RenderBaseline
	} else if _, has := obj.GetAnnotations()[r.keys.renderBaseline]; has {
		metaAnn[r.keys.renderBaseline] = nil
	}
	if len(metaAnn) > 0 {
		meta["annotations"] = metaAnn
	}
	p := map[string]any{"metadata": meta}
	if roll {
		node := p
		for _, f := range kind.TemplatePath {
			next := map[string]any{}
			node[f] = next
			node = next
		}
		ann := map[string]any{
			r.keys.controllerHash: rec.ControllerHash,
			r.keys.controllerBase: rec.ControllerBase,
			r.keys.controllerUses: rec.Uses,
		}
		tmpl, _ := kind.template(obj)
		switch {
		case rec.KeyID != "":
			ann[r.keys.controllerKeyID] = rec.KeyID
		case tmpl != nil && tmpl.Annotations[r.keys.controllerKeyID] != "":
			ann[r.keys.controllerKeyID] = nil // a plain record now
		}
		node["metadata"] = map[string]any{"annotations": ann}
	}
	raw, _ := json.Marshal(p) // maps of strings always marshal
	return raw
}

// relatedObject names the config an Event is about: the newest consumed
// change.
func relatedObject(changes []Change, uses []hashing.Use) runtime.Object {
	consumed := map[string]bool{}
	for _, u := range uses {
		consumed[u.Ref()] = true
	}
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		if !consumed[string(c.Kind)+"/"+c.Name] {
			continue
		}
		m := metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name, UID: c.UID}
		if c.Kind == hashing.KindSecret {
			return &corev1.Secret{ObjectMeta: m}
		}
		return &corev1.ConfigMap{ObjectMeta: m}
	}
	return nil
}

func metricLabel(r Reason) string { return strings.ReplaceAll(string(r), "-", "_") }
