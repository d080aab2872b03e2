// Package hashing is the confighash hash contract: the canonical content model
// of ConfigMaps and Secrets, discovery of what a pod spec consumes, and the
// versioned digest that both the render-time tools and the controller compute.
//
// It is pure: no I/O, no YAML library, no client. HASHING.md is the written
// specification; testdata/vectors holds the vectors every side checks.
package hashing
