// Package cli is the confighash command line: it tells a KRM ResourceList
// from a plain YAML stream on standard input and runs the KRM function or the
// stream mode (the Helm post-renderer) on it, plus the helper subcommands.
package cli
