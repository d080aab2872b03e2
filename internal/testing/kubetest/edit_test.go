package kubetest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/confighash/confighash/internal/testing/kubetest"
)

// TestEdit: the edit is stored and returned, done again from a fresh read
// when the update is refused as a conflict; an object that is not there is
// an error naming it, and nothing is edited.
func TestEdit(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}, Data: map[string]string{"LOG_LEVEL": "info"}})
	cms := cs.CoreV1().ConfigMaps("shop")
	for _, tc := range []struct {
		name, object, err string
		conflicts         int // updates refused before one goes through
		want              map[string]string
	}{
		{name: "present", object: "app", want: map[string]string{"LOG_LEVEL": "debug"}},
		{name: "conflict", object: "app", conflicts: 2, want: map[string]string{"LOG_LEVEL": "debug"}},
		{name: "absent", object: "gone", err: "get gone", want: map[string]string{"LOG_LEVEL": "info"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}, Data: map[string]string{"LOG_LEVEL": "info"}}, metav1.UpdateOptions{})
			require.NoError(t, err)
			refused, reads := 0, 0
			cs.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				reads++
				return false, nil, nil
			})
			cs.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				if refused < tc.conflicts {
					refused++
					return true, nil, apierrors.NewConflict(corev1.Resource("configmaps"), "app", errors.New("the object has been modified"))
				}
				return false, nil, nil
			})
			t.Cleanup(func() { cs.ReactionChain = cs.ReactionChain[2:] })
			got, err := kubetest.Edit(ctx, cms, tc.object, "kubectl-edit", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				assert.Nil(t, got)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got.Data, "the stored object is returned")
				assert.Equal(t, tc.conflicts+1, reads, "a read for each update")
			}
			stored, err := cms.Get(ctx, "app", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, stored.Data)
		})
	}
}
