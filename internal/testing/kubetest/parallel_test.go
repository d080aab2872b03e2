package kubetest_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/kubetest"
)

// TestParallel runs every index once with at most limit calls at a time,
// and returns the first error, after which no further call starts (exactly
// so when one runs at a time).
func TestParallel(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		n       int
		limit   int
		failAt  int // -1: no call fails
		wantErr error
	}{
		{"none", 0, 4, -1, nil},
		{"fewer than the limit", 3, 8, -1, nil},
		{"many through a few", 50, 4, -1, nil},
		{"one at a time", 10, 1, -1, nil},
		{"a limit below one is one", 5, 0, -1, nil},
		{"the first error", 50, 4, 7, boom},
		{"one at a time stops at the error", 10, 1, 3, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu            sync.Mutex
				ran           = map[int]int{}
				running, most atomic.Int32
			)
			err := kubetest.Parallel(tt.n, tt.limit, func(i int) error {
				now := running.Add(1)
				defer running.Add(-1)
				for {
					m := most.Load()
					if now <= m || most.CompareAndSwap(m, now) {
						break
					}
				}
				mu.Lock()
				ran[i]++
				mu.Unlock()
				time.Sleep(time.Millisecond) // let calls overlap
				if i == tt.failAt {
					return boom
				}
				return nil
			})
			require.ErrorIs(t, err, tt.wantErr)
			assert.LessOrEqual(t, int(most.Load()), max(tt.limit, 1), "calls at once")
			for i, c := range ran {
				assert.Equal(t, 1, c, "index %d ran %d times", i, c)
			}
			if tt.failAt < 0 {
				assert.Len(t, ran, tt.n, "every index runs")
				return
			}
			assert.Contains(t, ran, tt.failAt)
			if tt.limit == 1 {
				assert.Len(t, ran, tt.failAt+1, "one at a time stops at the failing index")
			}
		})
	}
}
