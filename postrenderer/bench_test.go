package postrenderer_test

import (
	"testing"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/benchgen"
	"github.com/confighash/confighash/postrenderer"
)

// BenchmarkProcess is the stream mode on the generated stream; `make bench`
// prints it as ratios against a kyaml round trip (hack/bench).
func BenchmarkProcess(b *testing.B) {
	input := benchgen.Stream(benchgen.Default)
	b.SetBytes(int64(len(input)))
	b.ResetTimer()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := postrenderer.Process(input, inject.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
