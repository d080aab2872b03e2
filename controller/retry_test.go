package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRetryLimiterCapsTheDelay: a workload whose reconcile keeps failing (a
// patch refused while the controller's Role lacks patch) is retried at
// growing intervals, 5 ms doubling, never more than maxRetryDelay apart, so
// a permission restored after hours is used within two minutes rather than
// controller-runtime's default of about 16. Another workload's failures do
// not delay it, and a success starts its intervals again.
func TestRetryLimiterCapsTheDelay(t *testing.T) {
	l := retryLimiter()
	web := Request{Kind: "Deployment", Namespace: "shop", Name: "web"}
	api := Request{Kind: "Deployment", Namespace: "shop", Name: "api"}
	assert.Equal(t, 5*time.Millisecond, l.When(web))
	assert.Equal(t, 10*time.Millisecond, l.When(web))
	var last time.Duration
	for range 40 {
		last = l.When(web)
	}
	assert.Equal(t, maxRetryDelay, last, "after 42 failures")
	assert.Equal(t, 5*time.Millisecond, l.When(api), "another workload")
	l.Forget(web)
	assert.Equal(t, 5*time.Millisecond, l.When(web), "after a success")
}
