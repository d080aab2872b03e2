package controller

import "github.com/go-logr/logr"

// With leader election, the manager releases its Lease when it stops
// (LeaderElectionReleaseOnCancel), and client-go's elector then reports the
// release as a loss: controller-runtime logs it at level error, as
// stopSequenceError with the error leaderElectionLost, at every clean stop.
// An operator reading the logs of a rolling update of the controller would
// chase an error that is none, so leaseReleaseSink logs that one line at
// info, in words that say what happened. A Lease lost while running is not
// logged this way: the manager returns the error and Run returns it.
const (
	stopSequenceError  = "error received after stop sequence was engaged"
	leaderElectionLost = "leader election lost"
	leaseReleasedMsg   = "released the leader election Lease while stopping"
)

// leaseReleaseSink passes everything to the sink it wraps, but the release
// of the Lease at a stop.
type leaseReleaseSink struct{ logr.LogSink }

// quietLeaseRelease returns log with the release of the Lease at a stop
// logged as info; a logger without a sink (controller-runtime's own) as is.
func quietLeaseRelease(log logr.Logger) logr.Logger {
	if log.GetSink() == nil {
		return log
	}
	return log.WithSink(leaseReleaseSink{log.GetSink()})
}

func (s leaseReleaseSink) Error(err error, msg string, kv ...any) {
	if msg == stopSequenceError && err != nil && err.Error() == leaderElectionLost {
		s.Info(0, leaseReleasedMsg, kv...)
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s leaseReleaseSink) WithValues(kv ...any) logr.LogSink {
	return leaseReleaseSink{s.LogSink.WithValues(kv...)}
}

func (s leaseReleaseSink) WithName(name string) logr.LogSink {
	return leaseReleaseSink{s.LogSink.WithName(name)}
}

// WithCallDepth keeps the caller the wrapped sink reports.
func (s leaseReleaseSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return leaseReleaseSink{cd.WithCallDepth(depth)}
	}
	return s
}
