// Package controlplane runs a real, local Kubernetes control plane for tests
// and demos: etcd, kube-apiserver and kube-controller-manager as child
// processes, all bound to 127.0.0.1. There is no kubelet and no scheduler, so
// Pods are created by the controllers but never run; Deployments,
// ReplicaSets, StatefulSets, DaemonSets, garbage collection and namespace
// deletion behave as in a real cluster.
//
// The binaries are built from Go modules by hack/build-controlplane.sh into
// the repository's bin/ directory (or the directory named by the
// CONFIGHASH_CONTROLPLANE_BIN environment variable).
//
// Start generates all credentials in a fresh temporary directory: a serving
// CA and certificate for the apiserver, a client CA used by AddUser, a
// service-account signing key and a static token file with an admin token
// (group system:masters) plus any Options.Users. Authorization is RBAC, so
// non-admin identities are subject to real permission checks.
//
// Typical use in a test:
//
//	cp, err := controlplane.Start(ctx, controlplane.Options{})
//	if err != nil { t.Fatal(err) }
//	t.Cleanup(func() { _ = cp.Stop() })
//	client := kubernetes.NewForConfigOrDie(cp.RESTConfig())
package controlplane
