package fn_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/confighash/confighash/fn"
	"github.com/confighash/confighash/internal/testing/benchgen"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// BenchmarkRun is the KRM function on the generated ResourceList; `make
// bench` prints it as a ratio against a kyaml round trip (hack/bench).
func BenchmarkRun(b *testing.B) {
	testtools.Throughput(b, benchgen.ResourceList(benchgen.Default), func(input []byte) error {
		_, err := fn.Run(fn.Processor{}, bytes.NewReader(input), io.Discard)
		return err
	})
}
