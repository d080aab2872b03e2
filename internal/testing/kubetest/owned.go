package kubetest

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// OwnedReplicaSets lists the ReplicaSets in namespace whose controller is
// the object with uid (a Deployment): one, plus one per rollout.
func OwnedReplicaSets(ctx context.Context, cs kubernetes.Interface, namespace string, uid types.UID) ([]appsv1.ReplicaSet, error) {
	list, err := cs.AppsV1().ReplicaSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list ReplicaSets in %s: %w", namespace, err)
	}
	return controlledBy(list.Items, uid), nil
}

// OwnedControllerRevisions lists the ControllerRevisions in namespace whose
// controller is the object with uid (a StatefulSet or DaemonSet): one, plus
// one per rollout.
func OwnedControllerRevisions(ctx context.Context, cs kubernetes.Interface, namespace string, uid types.UID) ([]appsv1.ControllerRevision, error) {
	list, err := cs.AppsV1().ControllerRevisions(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list ControllerRevisions in %s: %w", namespace, err)
	}
	return controlledBy(list.Items, uid), nil
}

// controlledBy returns the items whose controller is the object with uid.
func controlledBy[T any, P interface {
	*T
	metav1.Object
}](items []T, uid types.UID) []T {
	var out []T
	for i := range items {
		if ref := metav1.GetControllerOf(P(&items[i])); ref != nil && ref.UID == uid {
			out = append(out, items[i])
		}
	}
	return out
}
