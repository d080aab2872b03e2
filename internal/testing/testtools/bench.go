package testtools

import "testing"

// Throughput benchmarks run on input: b.N runs, the input's size as the
// bytes of each (so the result reads as MB/s) and allocations reported. An
// error from run fails the benchmark.
func Throughput(b *testing.B, input []byte, run func(input []byte) error) {
	b.Helper()
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := run(input); err != nil {
			b.Fatal(err)
		}
	}
}
