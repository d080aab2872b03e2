// Package stream is confighash's plain-stream mode, used as the Helm
// post-renderer and in pipelines: it parses a multi-document YAML stream to
// find what each workload consumes, runs the shared inject analysis, and
// writes the result by editing the original bytes, so the output differs from
// the input only in the annotation lines confighash adds or changes.
package stream
