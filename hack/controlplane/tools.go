//go:build tools

// Package tools pins the Go packages whose main programs form the local
// Kubernetes control plane used by tests and demos, and the kubectl of the
// same release (examples/kubectl_test.go). It is never compiled
// into anything; hack/build-controlplane.sh builds the imported commands.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
