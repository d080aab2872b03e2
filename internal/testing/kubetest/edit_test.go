package kubetest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/confighash/confighash/internal/testing/kubetest"
)

// TestEdit: the edit is stored and returned; an object that is not there is
// an error naming it, and nothing is edited.
func TestEdit(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}, Data: map[string]string{"LOG_LEVEL": "info"}})
	cms := cs.CoreV1().ConfigMaps("shop")
	for _, tc := range []struct {
		name, object, err string
		want              map[string]string
	}{
		{name: "present", object: "app", want: map[string]string{"LOG_LEVEL": "debug"}},
		{name: "absent", object: "gone", err: "get gone", want: map[string]string{"LOG_LEVEL": "info"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}, Data: map[string]string{"LOG_LEVEL": "info"}}, metav1.UpdateOptions{})
			require.NoError(t, err)
			got, err := kubetest.Edit(ctx, cms, tc.object, "kubectl-edit", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				assert.Nil(t, got)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got.Data, "the stored object is returned")
			}
			stored, err := cms.Get(ctx, "app", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, stored.Data)
		})
	}
}
