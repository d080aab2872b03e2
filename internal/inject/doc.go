// Package inject is the analysis behind every render-time adapter: it
// indexes the ConfigMaps and Secrets of a resource stream (their content
// read through hashing.ContentBuilder), finds each workload's pod template,
// and computes the hash of what the template consumes from the stream
// (Analyze, AnalyzeDocs). Filter, a kio.Filter, writes the hash, key id and
// external list as annotations: the KRM function (package fn) runs it. The
// Helm post-renderer (package postrenderer) runs the analysis and edits the
// bytes itself; confighash explain and confighash diff read the analysis.
package inject
