package kubetest

import (
	"context"
	"testing"
	"time"
)

// Eventually polls cond every interval until it holds or timeout passes,
// then fails the test naming what it waited for and the last error cond
// returned. cond gets a context that ends at the deadline.
func Eventually(t testing.TB, timeout, interval time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		case <-time.After(interval):
		}
	}
}

// EventuallyTrue is Eventually for a condition that reports no error.
func EventuallyTrue(t testing.TB, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, timeout, interval, what, func(context.Context) (bool, error) { return cond(), nil })
}
