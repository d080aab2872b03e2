// Command bench measures confighash and prints each result as a ratio
// against a floor measured in the same run: on the generated benchmark
// stream against a kyaml read+write of the same bytes; on real-world streams
// from the shared corpus ($CONFIGHASH_CORPUS) against cat and an in-process
// copy of the same bytes; on a chart with CRDs, helm template with the
// post-renderer against helm template without it, paired run by run; and
// its start-up against an empty Go program. Run it with `make bench`.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/confighash/confighash/fn"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/benchgen"
	"github.com/confighash/confighash/postrenderer"
)

func main() {
	bin := flag.String("bin", "bin/confighash", "confighash binary, for the process figures")
	rounds := flag.Int("rounds", 5, "rounds of the in-process steps; each step keeps its fastest")
	runs := flag.Int("runs", 11, "runs of each process on the real-world streams (medians)")
	pairsN := flag.Int("pairs", 15, "pairs of helm template runs, with and without the post-renderer (median ratio)")
	startRuns := flag.Int("startup-runs", 20, "runs of the start-up measurements (means)")
	corpus := flag.String("corpus", os.Getenv("CONFIGHASH_CORPUS"), "the shared corpus folder (default $CONFIGHASH_CORPUS)")
	helm3 := flag.String("helm3", envOr("HELM3", "bin/helm3"), "helm v3 binary (default $HELM3)")
	helm4 := flag.String("helm4", envOr("HELM4", "bin/helm4"), "helm v4 binary (default $HELM4)")
	only := flag.String("only", "synthetic,streams,chart,startup", "comma-separated parts to run")
	flag.Parse()
	if err := runAll(*bin, *only, *corpus, *helm3, *helm4, *rounds, *runs, *pairsN, *startRuns); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// lookPath finds a program on PATH, with an error naming it.
func lookPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is needed for a floor: %w", name, err)
	}
	return p, nil
}

// tool returns the absolute path of an executable, or "" with a line saying
// what is skipped when it is missing.
func tool(path, skipped string) string {
	abs, err := filepath.Abs(path)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		fmt.Printf("%s: %s is missing, skipped (make build tools)\n\n", skipped, path)
		return ""
	}
	return abs
}

// corpusDir returns the shared corpus folder, or "" after saying that part,
// which reads it, is skipped and why.
func corpusDir(corpus, part string) string {
	if corpus == "" {
		fmt.Printf("%s: skipped, CONFIGHASH_CORPUS is not set (make bench sets it to ../shared/corpus when that folder exists)\n\n", part)
		return ""
	}
	if _, err := os.Stat(corpus); err != nil {
		fmt.Printf("%s: skipped, the corpus %s is missing (CONFIGHASH_CORPUS)\n\n", part, corpus)
		return ""
	}
	return corpus
}

func runAll(bin, only, corpus, helm3, helm4 string, rounds, runs, pairsN, startRuns int) error {
	parts := strings.Split(only, ",")
	for _, p := range parts {
		if !slices.Contains([]string{"synthetic", "streams", "chart", "startup"}, p) {
			return fmt.Errorf("-only: unknown part %q (synthetic, streams, chart, startup)", p)
		}
	}
	if slices.Contains(parts, "synthetic") {
		if err := synthetic(rounds); err != nil {
			return err
		}
	}
	bin = tool(bin, "real-world streams, chart render and start-up")
	if bin == "" {
		return nil
	}
	// One scratch directory for the parts that write files, a folder each.
	tmp, err := os.MkdirTemp("", "confighash-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	for _, part := range []string{"streams", "chart", "startup"} {
		if err := os.Mkdir(filepath.Join(tmp, part), 0o755); err != nil {
			return err
		}
	}
	if slices.Contains(parts, "streams") {
		if c := corpusDir(corpus, "real-world streams"); c != "" {
			if err := realWorld(filepath.Join(tmp, "streams"), c, bin, runs, rounds); err != nil {
				return err
			}
		}
	}
	if slices.Contains(parts, "chart") {
		// The chart's CRDs come from the corpus.
		if c := corpusDir(corpus, "chart render"); c != "" {
			if err := chart(filepath.Join(tmp, "chart"), c, tool(helm3, "chart render with Helm 3"), tool(helm4, "chart render with Helm 4"), bin, pairsN); err != nil {
				return err
			}
		}
	}
	if slices.Contains(parts, "startup") {
		return startup(filepath.Join(tmp, "startup"), bin, startRuns)
	}
	return nil
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

// synthetic measures the generated stream (internal/testing/benchgen) against a
// kyaml read+write of the same bytes.
func synthetic(rounds int) error {
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
	fmt.Printf("stream mode, 2x stream / 1x:       time %.2fx  (target: <= 2.2x)\n\n", rs[4].ns/rs[3].ns)
	return nil
}
