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
	var out []appsv1.ReplicaSet
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.UID == uid {
			out = append(out, list.Items[i])
		}
	}
	return out, nil
}
