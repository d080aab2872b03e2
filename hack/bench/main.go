// Command bench measures confighash on the generated benchmark stream and
// prints each result as a ratio against a floor measured in the same run:
// a kyaml read+write of the same bytes. Run it with `make bench`.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/confighash/confighash/fn"
	"github.com/confighash/confighash/internal/benchgen"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/postrenderer"
)

func main() {
	bin := flag.String("bin", "bin/confighash", "confighash binary, for the start-up figure")
	rounds := flag.Int("rounds", 5, "rounds; each step keeps its fastest")
	flag.Parse()
	if err := run(*bin, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type result struct {
	name   string
	ns     float64
	allocs int64
	bytes  int64
}

// measure runs f on input with testing.Benchmark and keeps the fastest of
// the rounds it is given, so a busy moment on a noisy machine does not
// decide a ratio.
func measure(name string, input []byte, f func([]byte) error, prev result) (result, error) {
	var ferr error
	r := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := f(input); err != nil {
				ferr = err
				b.FailNow()
			}
		}
	})
	if ferr != nil {
		return result{}, fmt.Errorf("%s: %w", name, ferr)
	}
	cur := result{name: name, ns: float64(r.NsPerOp()), allocs: r.AllocsPerOp(), bytes: r.AllocedBytesPerOp()}
	if prev.ns > 0 && prev.ns < cur.ns {
		cur.ns = prev.ns
	}
	return cur, nil
}

// rlRoundTrip is the floor for the KRM function: the ResourceList read and
// write it must do, with the same reader settings.
func rlRoundTrip(input []byte) error {
	return roundTrip(&kio.ByteReadWriter{Reader: bytes.NewReader(input), Writer: io.Discard, KeepReaderAnnotations: true, PreserveSeqIndent: true})
}

// streamRoundTrip is the floor for the stream mode: the leanest faithful
// kyaml read and write of a plain stream that keeps sequence indentation
// (the reader adds its annotations and the writer removes them).
func streamRoundTrip(input []byte) error {
	return roundTrip(&kio.ByteReadWriter{Reader: bytes.NewReader(input), Writer: io.Discard, PreserveSeqIndent: true})
}

func roundTrip(rw *kio.ByteReadWriter) error {
	nodes, err := rw.Read()
	if err != nil {
		return err
	}
	return rw.Write(nodes)
}

func function(input []byte) error {
	_, err := fn.Run(fn.Processor{}, bytes.NewReader(input), io.Discard)
	return err
}

func streamMode(input []byte) error {
	_, _, err := postrenderer.Process(input, inject.Options{})
	return err
}

func run(bin string, rounds int) error {
	plain := benchgen.Stream(benchgen.Default)
	rl := benchgen.ResourceList(benchgen.Default)
	double := benchgen.Stream(benchgen.Default.Scale(2))
	fmt.Printf("stream: %d Deployments, %d ConfigMaps, %d Secrets, %.1f MB (ResourceList %.1f MB)\n\n",
		benchgen.Default.Deployments, benchgen.Default.ConfigMaps, benchgen.Default.Secrets,
		float64(len(plain))/1e6, float64(len(rl))/1e6)

	steps := []struct {
		name  string
		input []byte
		f     func([]byte) error
	}{
		{"floor: kyaml read+write, ResourceList", rl, rlRoundTrip},
		{"KRM function, ResourceList", rl, function},
		{"floor: kyaml read+write, plain stream", plain, streamRoundTrip},
		{"stream mode (byte edits)", plain, streamMode},
		{"stream mode, 2x stream", double, streamMode},
	}
	rs := make([]result, len(steps))
	for round := 0; round < rounds; round++ {
		for i, s := range steps {
			r, err := measure(s.name, s.input, s.f, rs[i])
			if err != nil {
				return err
			}
			rs[i] = r
		}
	}
	fmt.Printf("fastest of %d rounds, steps interleaved:\n", rounds)
	for _, r := range rs {
		fmt.Printf("%-40s %8.0f ms %10d allocs %8.1f MB allocated\n", r.name, r.ns/1e6, r.allocs, float64(r.bytes)/1e6)
	}
	fmt.Println()
	fmt.Printf("KRM function / kyaml round trip:   time %.2fx  allocs %.2fx   (target: time <= 1.10x)\n",
		rs[1].ns/rs[0].ns, float64(rs[1].allocs)/float64(rs[0].allocs))
	fmt.Printf("stream mode vs kyaml round trip:   throughput %.2fx  allocs %.2fx  (targets: >= 2.5x, <= 0.25x)\n",
		rs[2].ns/rs[3].ns, float64(rs[3].allocs)/float64(rs[2].allocs))
	fmt.Printf("stream mode, 2x stream / 1x:       time %.2fx  (target: <= 2.2x)\n", rs[4].ns/rs[3].ns)
	return startup(bin)
}

// startup times bin/confighash on empty input, the cost Helm pays per call.
func startup(bin string) error {
	if _, err := os.Stat(bin); err != nil {
		fmt.Printf("start-up: %s not built, skipped (make build)\n", bin)
		return nil
	}
	abs, _ := filepath.Abs(bin)
	const n = 20
	var total time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		cmd := exec.Command(abs)
		cmd.Stdin = bytes.NewReader(nil)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("start-up run: %w: %s", err, out)
		}
		total += time.Since(start)
	}
	fmt.Printf("start-up, empty input:             %.1f ms (mean of %d runs)\n", float64(total.Microseconds())/1000/n, n)
	return nil
}
