package kubetest

import "sync"

// Parallel calls fn(i) for every i in [0, n), at most limit calls at a
// time (one when limit is below one), and returns the first error a call
// returned once every started call has returned. After a call fails, no
// further call starts. Tests use it to create many objects at once without
// flooding the API server.
func Parallel(n, limit int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != nil
	}
	slots := make(chan struct{}, max(limit, 1))
	for i := range n {
		slots <- struct{}{}
		if failed() {
			<-slots
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if err := fn(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}
