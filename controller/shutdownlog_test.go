package controller

import (
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
)

// TestQuietLeaseRelease: the manager's report of the Lease it released at a
// stop is logged at info, through names and values; every other error,
// the same message with another error included, stays an error.
func TestQuietLeaseRelease(t *testing.T) {
	var lines []string
	base := funcr.NewJSON(func(obj string) { lines = append(lines, obj) }, funcr.Options{})
	log := quietLeaseRelease(base).WithName("manager").WithValues("pid", 7)

	log.Error(errors.New(leaderElectionLost), stopSequenceError)
	log.Error(errors.New("context deadline exceeded"), stopSequenceError)
	log.Error(errors.New(leaderElectionLost), "leader election lost while running")
	log.Info("started")

	want := []string{
		`{"logger":"manager","level":0,"msg":"` + leaseReleasedMsg + `","pid":7}`,
		`{"logger":"manager","msg":"` + stopSequenceError + `","error":"context deadline exceeded","pid":7}`,
		`{"logger":"manager","msg":"leader election lost while running","error":"leader election lost","pid":7}`,
		`{"logger":"manager","level":0,"msg":"started","pid":7}`,
	}
	assert.Equal(t, want, lines)
	assert.Nil(t, quietLeaseRelease(logr.Logger{}).GetSink(), "no sink: controller-runtime's logger")
}
