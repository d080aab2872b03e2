// Package inject is the one kio.Filter behind every render-time adapter: it
// indexes the ConfigMaps and Secrets of a resource stream, finds each
// workload's pod template, and writes the hash of what the template consumes
// from the stream as an annotation on it. The KRM function, the Helm
// post-renderer and `confighash explain` all run it.
package inject
