package controller

import (
	"context"
	"hash/maphash"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/confighash/confighash/hashing"
)

// configRef names one ConfigMap or Secret in a namespace.
type configRef struct {
	namespace string
	name      string
	secret    bool
}

// refOf is the configRef of a use of a config in namespace ns.
func refOf(ns string, u hashing.Use) configRef {
	return configRef{namespace: ns, name: u.Name, secret: u.Kind == hashing.KindSecret}
}

// consumer is one workload consuming a config (its namespace is the
// config's).
type consumer struct {
	kind *workloadKind
	name string
}

// consumerIndex maps each config a managed workload consumes to the
// workloads consuming it: one map entry per consumed config, keyed by a
// 64-bit hash of the config's namespace, kind and name, holding a slice of
// workloads (usually one), where client-go's indexers hold a set of keys
// per value. Two configs whose hashes collide share an entry: a lookup may
// return a workload that does not consume the config, which the caller
// drops (enqueueConsumers checks each). The workload event handler keeps
// the index, before it queues the workload, so a workload is found here
// once its reconcile is queued.
type consumerIndex struct {
	mu    sync.RWMutex
	seed  maphash.Seed
	byRef map[uint64][]consumer
	// synced has one channel per workload kind, closed once the kind's
	// initial list has gone through the handler (see syncedSource).
	synced map[*workloadKind]chan struct{}
}

func newConsumerIndex(kinds []*workloadKind) *consumerIndex {
	ix := &consumerIndex{seed: maphash.MakeSeed(), byRef: map[uint64][]consumer{}, synced: map[*workloadKind]chan struct{}{}}
	for _, k := range kinds {
		ix.synced[k] = make(chan struct{})
	}
	return ix
}

// update replaces the configs a workload consumes: old, what it consumed
// (as last indexed), by cur.
func (ix *consumerIndex) update(c consumer, old, cur []configRef) {
	if slices.Equal(old, cur) {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, ref := range old {
		h := ix.hash(ref)
		list := ix.byRef[h]
		if i := slices.Index(list, c); i >= 0 {
			last := len(list) - 1
			list[i] = list[last]
			list[last] = consumer{}
			list = list[:last]
		}
		if len(list) == 0 {
			delete(ix.byRef, h)
		} else {
			ix.byRef[h] = list
		}
	}
	for _, ref := range cur {
		h := ix.hash(ref)
		ix.byRef[h] = append(ix.byRef[h], c)
	}
}

func (ix *consumerIndex) hash(ref configRef) uint64 { return maphash.Comparable(ix.seed, ref) }

// consumers returns a copy of the workloads consuming ref (and, rarely,
// of another config whose hash collides), once every workload kind's
// initial list is indexed (or ctx is done).
func (ix *consumerIndex) consumers(ctx context.Context, ref configRef) []consumer {
	for _, ch := range ix.synced {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil
		}
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return slices.Clone(ix.byRef[ix.hash(ref)])
}

// consumes is what a managed workload consumes, sorted, each config once;
// nil for a workload the controller does not manage (or whose template
// it cannot read).
func (r *Reconciler) consumes(kind *workloadKind, obj client.Object) []configRef {
	tmpl, err := kind.template(obj)
	if err != nil || tmpl == nil {
		return nil
	}
	v := inspect(obj.GetNamespace(), obj.GetAnnotations(), tmpl, r.keys, r.keyID)
	if !v.Managed {
		return nil
	}
	out := make([]configRef, 0, len(v.Uses))
	for _, u := range v.Uses {
		out = append(out, refOf(obj.GetNamespace(), u))
	}
	slices.SortFunc(out, compareRefs)
	return slices.Compact(out)
}

func compareRefs(a, b configRef) int {
	if c := strings.Compare(a.namespace, b.namespace); c != 0 {
		return c
	}
	if a.secret != b.secret {
		if a.secret {
			return 1
		}
		return -1
	}
	return strings.Compare(a.name, b.name)
}

// syncedSource is a workload kind's watch, which closes synced once the
// controller saw it synced: its handler has indexed the initial list.
type syncedSource struct {
	source.TypedSyncingSource[Request]
	synced chan struct{}
	once   sync.Once
}

// WaitForSync implements source.TypedSyncingSource.
func (s *syncedSource) WaitForSync(ctx context.Context) error {
	err := s.TypedSyncingSource.WaitForSync(ctx)
	if err == nil && ctx.Err() == nil {
		s.once.Do(func() { close(s.synced) })
	}
	return err
}
