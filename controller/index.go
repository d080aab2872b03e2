package controller

import (
	"context"
	"maps"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
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
			r.enqueueConsumers(ctx, kind, e.Object, OpCreated, nil, q)
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
			r.enqueueConsumers(ctx, kind, e.ObjectNew, OpChanged, changed, q)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			r.metrics.configEvents.WithLabelValues(string(kind), "deleted").Inc()
			r.enqueueConsumers(ctx, kind, e.Object, OpDeleted, nil, q)
		},
	}
}

// enqueueConsumers queues every managed workload in the object's namespace
// that consumes it, reading the index from the cache (no API call).
func (r *Reconciler) enqueueConsumers(ctx context.Context, kind hashing.Kind, obj client.Object, op Op, keys []string, q queue) {
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
			r.memory.noteChange(req, change)
			q.Add(req)
		}
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
