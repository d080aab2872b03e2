package controller

import (
	"context"
	"fmt"
	"maps"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/confighash/confighash/hashing"
)

// IndexConsumes is the field index on managed workloads: one value per
// consumed config, "ConfigMap/name" or "Secret/name" (the cache scopes it by
// namespace). Unmanaged workloads have no value.
const IndexConsumes = "confighash.dev/consumes"

// indexer returns the index function of a workload kind. It uses the same
// discovery as the reconciler, so an event reaches exactly the workloads the
// reconciler would hash the config for.
func (r *Reconciler) indexer(kind *workloadKind) client.IndexerFunc {
	return func(obj client.Object) []string {
		tmpl, err := kind.template(obj)
		if err != nil || tmpl == nil {
			return nil
		}
		v := inspect(obj.GetNamespace(), obj.GetAnnotations(), tmpl, r.keys, r.keyID)
		if !v.Managed {
			return nil
		}
		return refs(v.Uses)
	}
}

// addConsumesIndex adds IndexConsumes to the informer of obj's kind, read
// by a List with client.InNamespace and client.MatchingFields. It is what
// controller-runtime's IndexField does, without the second, cluster-wide
// value IndexField adds for every value (a List across namespaces, which
// the controller never makes): half the index entries, each a set of its
// own. The index name and value follow controller-runtime's cache reader
// ("field:" + the field, "namespace/" + the value).
func addConsumesIndex(ctx context.Context, c cache.Informers, obj client.Object, extract client.IndexerFunc) error {
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	return inf.AddIndexers(toolscache.Indexers{"field:" + IndexConsumes: func(raw any) ([]string, error) {
		o, ok := raw.(client.Object)
		if !ok {
			return nil, fmt.Errorf("%T is not an object", raw)
		}
		vals := extract(o)
		for i, v := range vals {
			vals[i] = o.GetNamespace() + "/" + v
		}
		return vals, nil
	}})
}

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
			newC, err := ContentOf(e.Object)
			r.enqueueConsumers(ctx, kind, e.Object, OpCreated, nil, transition{after: state{content: newC, version: e.Object.GetResourceVersion(), found: err == nil}}, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			oldC, err1 := ContentOf(e.ObjectOld)
			newC, err2 := ContentOf(e.ObjectNew)
			changed := changedKeys(oldC, newC)
			if err1 == nil && err2 == nil && len(changed) == 0 {
				r.metrics.configEvents.WithLabelValues(string(kind), "metadata").Inc()
				return
			}
			r.metrics.configEvents.WithLabelValues(string(kind), "content").Inc()
			r.enqueueConsumers(ctx, kind, e.ObjectNew, OpChanged, changed,
				transition{
					before: state{content: oldC, version: e.ObjectOld.GetResourceVersion(), found: err1 == nil},
					after:  state{content: newC, version: e.ObjectNew.GetResourceVersion(), found: err2 == nil},
				}, q)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			r.metrics.configEvents.WithLabelValues(string(kind), "deleted").Inc()
			oldC, err := ContentOf(e.Object)
			r.enqueueConsumers(ctx, kind, e.Object, OpDeleted, nil, transition{before: state{content: oldC, version: e.Object.GetResourceVersion(), found: err == nil}}, q)
		},
	}
}

// state is a config's content and resourceVersion; found is false when it
// does not exist.
type state struct {
	content hashing.Content
	version string
	found   bool
}

// transition is a config's content before and after an event.
type transition struct {
	before, after state
}

// enqueueConsumers queues every managed workload in the object's namespace
// that consumes it, reading the index from the cache (no API call; the
// cache's List waits for the workload informers' first list, so no
// consumer is missed at start-up). A consumer that has no baseline of the
// object yet remembers its hash from before the event (see firstSeen).
func (r *Reconciler) enqueueConsumers(ctx context.Context, kind hashing.Kind, obj client.Object, op Op, keys []string, tr transition, q queue) {
	ns := obj.GetNamespace()
	change := Change{Kind: kind, Namespace: ns, Name: obj.GetName(), UID: obj.GetUID(), Op: op, Keys: keys}
	ref := string(kind) + "/" + obj.GetName()
	for _, k := range r.sortedKinds() {
		list := k.newList()
		err := r.reader.List(ctx, list, client.InNamespace(ns), client.MatchingFields{IndexConsumes: ref}, client.UnsafeDisableDeepCopy)
		if err != nil {
			r.log.Error(err, "listing consumers from the cache", "config", ref, "namespace", ns, "kind", k.Name)
			continue
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			r.log.Error(err, "reading consumers", "config", ref, "namespace", ns, "kind", k.Name)
			continue
		}
		for _, item := range items {
			o, ok := item.(client.Object)
			if !ok {
				continue
			}
			req := Request{Kind: k.Name, Namespace: ns, Name: o.GetName()}
			r.noteFirstSeen(req, k, o, ref, tr)
			r.memory.noteChange(req, change)
			q.Add(req)
		}
	}
}

// noteFirstSeen remembers, for a consumer of the external config ref, the
// config's hash before this event, the content its pods run (the first
// observation wins), when the consumer has no baseline of ref yet, or when
// this process wrote its baseline from the content after this event: read
// from the cache between the edit landing there and this handler running,
// that baseline absorbed the edit. A required config that did not exist is
// not remembered: pods cannot have started without it, so when it arrives
// it is the first content they see.
func (r *Reconciler) noteFirstSeen(req Request, kind *workloadKind, o client.Object, ref string, tr transition) {
	absorbed := r.memory.takeWritten(req, ref) == tr.after.version && tr.after.found
	tmpl, err := kind.template(o)
	if err != nil || tmpl == nil {
		return
	}
	v := r.view(req, o, tmpl)
	if !v.Managed || !v.External[ref] {
		return
	}
	if !tr.before.found {
		for _, u := range v.Uses {
			if u.Ref() == ref && !u.Optional {
				return
			}
		}
	}
	baseline, keyID := ParseBaseline(v.Baseline)
	if _, recorded := baseline[ref]; recorded && keyID == r.keyID && !absorbed {
		return // recorded before the edit: the edit is compared with it
	}
	lookup := func(hashing.Kind, string) (hashing.Content, bool) { return tr.before.content, tr.before.found }
	for ref, h := range r.externalHashes(req.Namespace, v, ref, lookup) {
		r.memory.noteFirstSeen(req, ref, h)
	}
}

// manages reports whether the controller manages a workload object.
func (r *Reconciler) manages(kind *workloadKind, obj client.Object) bool {
	tmpl, err := kind.template(obj)
	return err == nil && tmpl != nil && inspect(obj.GetNamespace(), obj.GetAnnotations(), tmpl, r.keys, r.keyID).Managed
}

// workloadHandler queues a managed workload when it appears, when its spec
// or annotations change, and on resyncs; status-only updates and workloads
// nobody opted in are dropped (one that opts out is queued once, to be
// forgotten).
func (r *Reconciler) workloadHandler(kind *workloadKind) handler.TypedEventHandler[client.Object, Request] {
	req := func(o client.Object) Request {
		return Request{Kind: kind.Name, Namespace: o.GetNamespace(), Name: o.GetName()}
	}
	return handler.TypedFuncs[client.Object, Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			if r.manages(kind, e.Object) {
				q.Add(req(e.Object))
			}
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			o, n := e.ObjectOld, e.ObjectNew
			relevant := o.GetResourceVersion() == n.GetResourceVersion() || o.GetGeneration() != n.GetGeneration() ||
				!maps.Equal(o.GetAnnotations(), n.GetAnnotations())
			if relevant && (r.manages(kind, n) || r.manages(kind, o)) {
				q.Add(req(n))
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], _ queue) {
			r.memory.forget(req(e.Object))
		},
	}
}
