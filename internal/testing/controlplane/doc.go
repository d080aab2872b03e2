// Package controlplane runs a real, local Kubernetes control plane for tests
// and demos: etcd, kube-apiserver and kube-controller-manager as child
// processes, all bound to 127.0.0.1. There is no kubelet and no scheduler, so
// Pods are created by the controllers but never run; Deployments,
// ReplicaSets, StatefulSets, DaemonSets, garbage collection and namespace
// deletion behave as in a real cluster.
//
// etcd and kube-apiserver are started through controller-runtime's envtest
// (envtest.ControlPlane), which also makes the apiserver's certificates,
// its service-account key and its users (client certificates: AddUser,
// Options.Users). This package adds what envtest lacks: it runs
// kube-controller-manager (with its kubeconfig, the apiserver's
// service-account signing key and the controllers of Options.Controllers),
// provisions an admin and writes its kubeconfig, restarts single
// components with the same data directory and port (StopAPIServer,
// StartEtcd, …) for fault tests, starts a component again on new ports when
// a port picked for it was taken before it bound it (on its first start,
// unless Options fixes the port), keeps one log file per component and puts
// its tail in start errors, and removes what a killed test process left
// behind (sweepStale).
//
// # Binaries
//
// The three binaries are looked up in Options.BinDir; when it is empty, in
// $CONFIGHASH_CONTROLPLANE_BIN, else $KUBEBUILDER_ASSETS, else the bin/
// directory of the repository; envtest's TEST_ASSET_ETCD,
// TEST_ASSET_KUBE_APISERVER and TEST_ASSET_KUBE_CONTROLLER_MANAGER name
// single binaries. There are two ways to get them:
//
//   - `make controlplane` (hack/build-controlplane.sh) builds all three from
//     the Kubernetes and etcd Go modules pinned in hack/controlplane/go.mod
//     into bin/: 12–20 minutes cold, seconds when the build cache is warm.
//   - Online, envtest's setup-envtest downloads etcd and kube-apiserver:
//     `export KUBEBUILDER_ASSETS=$(setup-envtest use 1.37.x -p path)`. Its
//     archives hold no kube-controller-manager, and every test that needs a
//     rollout (ReplicaSets, ControllerRevisions) needs one: build it with
//     `make controlplane`, or name one of the same version with
//     TEST_ASSET_KUBE_CONTROLLER_MANAGER.
//
// Typical use in a test (package cptest wraps this with skip-or-fail and a
// control plane shared by a test package):
//
//	cp, err := controlplane.Start(ctx, controlplane.Options{})
//	if err != nil { t.Fatal(err) }
//	t.Cleanup(func() { _ = cp.Stop() })
//	client := kubernetes.NewForConfigOrDie(cp.RESTConfig())
package controlplane
