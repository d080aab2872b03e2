package postrenderer_test

import (
	"testing"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/benchgen"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

// BenchmarkProcess is the stream mode on the generated stream; `make bench`
// prints it as ratios against a kyaml round trip (hack/bench).
func BenchmarkProcess(b *testing.B) {
	testtools.Throughput(b, benchgen.Stream(benchgen.Default), func(input []byte) error {
		_, _, err := postrenderer.Process(input, inject.Options{})
		return err
	})
}
