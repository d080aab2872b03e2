package kubetest

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// Editable is the part of a typed client-go client (ConfigMaps(ns),
// Secrets(ns), Deployments(ns), …) that Edit uses.
type Editable[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Edit changes the object name the way `kubectl edit` does: it reads it,
// lets edit change it and writes it back with an update as fieldManager
// (none when empty). An update refused as a conflict (another writer came
// between the read and the write: on a Deployment its own controller often
// does) is done again from a fresh read, as a user whose edit kubectl
// refused does. It returns the object as the API server stored it, so its
// resourceVersion names the edit.
func Edit[T any](ctx context.Context, client Editable[T], name, fieldManager string, edit func(T)) (T, error) {
	var stored T
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get %s: %w", name, err)
		}
		edit(obj)
		if stored, err = client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("update %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return stored, nil
}
