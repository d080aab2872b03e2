// Package kubetest holds the helpers that tests against a cluster share:
// the manifest of a workload reading config (Workload), polling with a
// deadline (Eventually), server-side apply of a YAML stream (Apply), an edit
// the way kubectl edit makes one (Edit), the revisions a workload owns
// (OwnedReplicaSets, OwnedControllerRevisions), building the commands of
// this module (BuildCommands), running one as a process with its logs kept
// (StartProcess), reading a Prometheus /metrics endpoint (Metric) and
// creating many objects at once with bounded concurrency (Parallel). It is
// test support: product packages do not import it.
package kubetest
