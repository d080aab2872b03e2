package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

// corpusStream is a real-world stream from the shared corpus.
type corpusStream struct {
	name      string
	namespace string
	file      string // the stream as one file, for the processes' standard input
	data      []byte
}

// loadCorpus reads the Argo CD install and the kube-prometheus manifests
// (all files, sorted, as one stream, as the corpus tests read them) from the
// corpus folder; the kube-prometheus stream is written to a file in tmp.
func loadCorpus(corpus, tmp string) ([]corpusStream, error) {
	argo := filepath.Join(corpus, "argo-cd", "install.yaml")
	data, err := os.ReadFile(argo)
	if err != nil {
		return nil, err
	}
	streams := []corpusStream{{name: "Argo CD install.yaml", namespace: "argocd", file: argo, data: data}}

	files, err := testtools.ReadCorpusFolder(corpus, "kube-prometheus")
	if err != nil {
		return nil, err
	}
	kp := testtools.Stream(files)
	kpFile := filepath.Join(tmp, "kube-prometheus.yaml")
	if err := os.WriteFile(kpFile, kp, 0o600); err != nil {
		return nil, err
	}
	streams = append(streams, corpusStream{
		name: fmt.Sprintf("kube-prometheus manifests (%d files)", len(files)), namespace: "monitoring",
		file: kpFile, data: kp,
	})
	return streams, nil
}

// copyBytes is the in-process floor: read the bytes into a buffer and write
// them out.
func copyBytes(input []byte) error {
	var b bytes.Buffer
	if _, err := b.ReadFrom(bytes.NewReader(input)); err != nil {
		return err
	}
	_, err := b.WriteTo(io.Discard)
	return err
}

// realWorld measures each corpus stream: confighash as a process against
// cat of the same bytes (CPU and wall, n runs alternated), and stream mode in
// process against an in-process copy (fastest of rounds).
// tmp is a scratch directory of its own.
func realWorld(tmp, corpus, bin string, n, rounds int) error {
	streams, err := loadCorpus(corpus, tmp)
	if err != nil {
		return fmt.Errorf("reading the corpus %s: %w", corpus, err)
	}
	cat, err := lookPath("cat")
	if err != nil {
		return err
	}
	fmt.Printf("real-world streams from %s: %d runs per process, alternated, each stream piped in and out as Helm 3 pipes a post-renderer; CPU = user+sys of the process\n", corpus, n)
	for _, s := range streams {
		floor := command{argv: []string{cat}, stdin: s.file}
		ch := command{argv: []string{bin, "--namespace", s.namespace}, stdin: s.file}
		cats, chs, err := pairs(floor, ch, n)
		if err != nil {
			return err
		}
		opts := inject.Options{DefaultNamespace: s.namespace}
		var cp, sm result
		for r := 0; r < rounds; r++ {
			if cp, err = measure("in-process copy", s.data, copyBytes, cp); err != nil {
				return err
			}
			if sm, err = measure("stream mode", s.data, func(in []byte) error {
				_, _, err := postrenderer.Process(in, opts)
				return err
			}, sm); err != nil {
				return err
			}
		}
		fmt.Printf("\n%s: %.2f MB, %d documents\n", s.name, float64(len(s.data))/1e6, documents(s.data))
		fmt.Printf("  %-44s CPU %7.2f ms  wall %7.2f ms   (medians)\n", "floor: cat | stream", ms(median(cats, cpu)), ms(median(cats, wall)))
		fmt.Printf("  %-44s CPU %7.2f ms  wall %7.2f ms   CPU %.1fx cat, wall %.1fx cat\n",
			"confighash --namespace "+s.namespace, ms(median(chs, cpu)), ms(median(chs, wall)),
			float64(median(chs, cpu))/float64(median(cats, cpu)), float64(median(chs, wall))/float64(median(cats, wall)))
		fmt.Printf("  %-44s     %7.3f ms   (fastest of %d rounds)\n", "floor: in-process copy", cp.ns/1e6, rounds)
		fmt.Printf("  %-44s     %7.2f ms   %.0fx the copy, %d allocs, %.1f MB allocated\n",
			"stream mode in process (postrenderer.Process)", sm.ns/1e6, sm.ns/cp.ns, sm.allocs, float64(sm.bytes)/1e6)
		if s.namespace == "argocd" {
			fmt.Printf("  target: confighash CPU <= 30 ms on the Argo CD install: %.1f ms\n", ms(median(chs, cpu)))
		}
	}
	fmt.Println()
	return nil
}

// documents counts the documents of a stream that hold something other
// than comments.
func documents(b []byte) int {
	n, open := 0, false
	for _, line := range bytes.Split(b, []byte("\n")) {
		t := bytes.TrimSpace(line)
		switch {
		case bytes.Equal(bytes.TrimRight(line, " \r"), []byte("---")):
			open = false
		case len(t) > 0 && t[0] != '#' && !open:
			n, open = n+1, true
		}
	}
	return n
}
