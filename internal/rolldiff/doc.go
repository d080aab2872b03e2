// Package rolldiff compares two renders of the same manifests and tells, for
// every workload, whether confighash (and the workload's own controller)
// would roll it, and why: which consumed keys of which ConfigMaps and
// Secrets were added, removed or changed (names only, never values), which
// pod template fields changed for another reason, which workloads are new or
// removed, and which consumed configs left or joined the render.
//
// It reads renders with or without confighash annotations. The hashes it
// compares are computed with inject.Analyze, the code that writes them, so
// "rolls because of config" holds exactly when the confighash.dev/hash of the
// two renders differ once both are rendered with confighash. An annotation
// already present that does not match the content is reported.
package rolldiff
