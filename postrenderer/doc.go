// Package postrenderer is the Helm post-renderer: confighash run by helm
// install, upgrade and template, so that a chart written without checksum
// annotations rolls its workloads when their ConfigMaps and Secrets change.
//
// It is also bin/confighash's plain-stream mode. It parses a multi-document
// YAML stream to find what each workload consumes, runs the shared inject
// analysis, and writes the result by editing the original bytes, so the
// output differs from the input only in the annotation lines confighash adds
// or changes. A Go program that installs charts through the Helm SDK uses it
// in-process: New returns a PostRenderer whose Run has the shape of the SDK's
// post-renderer interface in Helm 3 (pkg/postrender) and Helm 4
// (pkg/postrenderer); examples/helm-sdk shows both.
//
// For the helm command line the adapter is bin/confighash plus the Helm 4
// plugin in postrenderer/plugin/; this package's tests run both under the
// real helm v3 and v4.
//
// Helm 3 executable contract: --post-renderer names an executable (a path, or
// a name looked up in PATH) and --post-renderer-args adds one argument each.
// Helm 3 writes the rendered non-hook manifests, with their "# Source:"
// comments and CRDs when included, to its standard input, and uses its
// standard output as the release manifest; hooks never reach it. A non-zero
// exit fails the command and Helm 3 prints the program's standard error in
// its error message:
//
//	helm template web ./chart -n shop --post-renderer bin/confighash --post-renderer-args=--namespace=shop
//
// Helm 4 plugin contract: --post-renderer names a plugin of type
// postrenderer/v1 (apiVersion v1, subprocess runtime), found in Helm's
// plugins directory; helm plugin install postrenderer/plugin links it there
// (a local directory needs no signature and no --verify=false). Helm 4 sends
// hooks and regular manifests in one stream, re-serialised (no "# Source:"
// comments, documents ordered by template file name), and tags every
// document with the annotation postrenderer.helm.sh/postrender-filename,
// which it reads back to rebuild the files and then removes; confighash keeps
// that annotation like any other. Hook resources are treated like any other
// resource: a hook Job consuming a ConfigMap of the release gets a hash.
// Helm 4 writes the post-renderer's output anew before it stores it, which
// changes some block scalars (folded ones, ones that keep their blank
// lines); a ConfigMap or Secret holding one is hashed as Helm 4 stores it.
// Helm 4 discards the plugin's standard error and reports only that the
// plugin exited with an error, so the plugin's wrapper script carries the
// message in a document that Helm rejects with the message in its own error,
// before anything is applied or printed.
//
// docs/helm.md has the user-facing guide.
package postrenderer
