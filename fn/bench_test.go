package fn_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/confighash/confighash/fn"
	"github.com/confighash/confighash/internal/testing/benchgen"
)

// BenchmarkRun is the KRM function on the generated ResourceList; `make
// bench` prints it as a ratio against a kyaml round trip (hack/bench).
func BenchmarkRun(b *testing.B) {
	input := benchgen.ResourceList(benchgen.Default)
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := fn.Run(fn.Processor{}, bytes.NewReader(input), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
