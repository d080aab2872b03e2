package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
)

// flushQuiet is how long no reconcile and no Event write must have been in
// flight before the recorder is shut down at the end of the process;
// flushTimeout bounds the wait.
const (
	flushQuiet   = 100 * time.Millisecond
	flushTimeout = 10 * time.Second
)

// eventRecorder records the controller's Events (events.k8s.io/v1) with
// client-go's broadcaster, like the manager's recorder, but writes the
// Events of the last reconciles before the process stops. The manager's
// recorder cancels its writes as soon as its broadcaster is shut down: a
// roll made a moment before SIGTERM (each rolling update of the
// controller) lost its ConfigChanged Event, and the new leader, which
// finds the workload in sync, writes none.
type eventRecorder struct {
	client    eventsv1client.EventsV1Interface
	scheme    *runtime.Scheme
	component string
	log       logr.Logger

	mu      sync.Mutex
	rec     events.EventRecorder // nil until the first Event
	stop    func()
	stopped bool

	inFlight atomic.Int64 // Event writes
	last     atomic.Int64 // unix nanoseconds of the last write's start or end
}

func newEventRecorder(client eventsv1client.EventsV1Interface, scheme *runtime.Scheme, component string, log logr.Logger) *eventRecorder {
	return &eventRecorder{client: client, scheme: scheme, component: component, log: log}
}

// Eventf records an Event. The broadcaster starts with the first one, so a
// standby that never leads starts nothing; after flush, Events are dropped
// (logged).
func (r *eventRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.mu.Lock()
	if r.rec == nil && !r.stopped {
		r.start()
	}
	rec := r.rec
	r.mu.Unlock()
	if rec == nil {
		r.log.Info("stopping: Event not recorded", "reason", reason, "note", fmt.Sprintf(note, args...))
		return
	}
	rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func (r *eventRecorder) start() {
	b := events.NewBroadcaster(&trackedSink{EventSink: &events.EventSinkImpl{Interface: r.client}, r: r})
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), r.log))
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		r.log.Error(err, "starting the Event recorder")
	}
	r.rec = b.NewRecorder(r.scheme, r.component)
	r.stop = func() {
		b.Shutdown()
		r.waitIdle(func() bool { return true })
		cancel()
	}
}

// flush waits until busy has been false, with no Event write in flight,
// for flushQuiet, then shuts the broadcaster down (the queued Events are
// handed to the sink) and waits for their writes to end; at most
// flushTimeout for each wait.
func (r *eventRecorder) flush(busy func() bool) {
	r.waitIdle(func() bool { return !busy() })
	r.mu.Lock()
	stop := r.stop
	r.stopped, r.stop = true, nil
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// waitIdle polls until idle has held, with no Event write in flight and
// none started or ended, for flushQuiet, or until flushTimeout passes.
func (r *eventRecorder) waitIdle(idle func() bool) {
	deadline := time.Now().Add(flushTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var since time.Time
	for now := time.Now(); now.Before(deadline); now = <-tick.C {
		switch {
		case !idle() || r.inFlight.Load() > 0 || now.Sub(time.Unix(0, r.last.Load())) < flushQuiet:
			since = time.Time{}
		case since.IsZero():
			since = now
		case now.Sub(since) >= flushQuiet:
			return
		}
	}
}

// trackedSink counts the Event writes in flight.
type trackedSink struct {
	events.EventSink
	r *eventRecorder
}

func (s *trackedSink) track() func() {
	s.r.inFlight.Add(1)
	s.r.last.Store(time.Now().UnixNano())
	return func() {
		s.r.last.Store(time.Now().UnixNano())
		s.r.inFlight.Add(-1)
	}
}

func (s *trackedSink) Create(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	defer s.track()()
	return s.EventSink.Create(ctx, event)
}

func (s *trackedSink) Update(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	defer s.track()()
	return s.EventSink.Update(ctx, event)
}

func (s *trackedSink) Patch(ctx context.Context, oldEvent *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	defer s.track()()
	return s.EventSink.Patch(ctx, oldEvent, data)
}

// flusher is the manager runnable that, when the manager stops, waits for
// the reconciles still running and writes their Events, before the manager
// releases the Lease and the process exits. It runs with the controller
// (on the leader only).
type flusher struct {
	events *eventRecorder
	busy   func() bool
}

// Start blocks until ctx ends, then flushes.
func (f flusher) Start(ctx context.Context) error {
	<-ctx.Done()
	f.events.flush(f.busy)
	return nil
}
