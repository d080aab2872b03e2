package kubetest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/confighash/confighash/internal/testing/kubetest"
)

// TestOwned: only the revisions whose controller is the workload count, in
// its namespace; one it merely owns (not as controller) does not.
func TestOwned(t *testing.T) {
	ctx := context.Background()
	yes, no := true, false
	meta := func(name, ns string, uid types.UID, controller *bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, Namespace: ns}
		if uid != "" {
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "X", Name: "w", UID: uid, Controller: controller}}
		}
		return m
	}
	var objs []runtime.Object
	for _, m := range []metav1.ObjectMeta{
		meta("a", "shop", "w", &yes), meta("b", "shop", "w", &yes), meta("c", "shop", "other", &yes),
		meta("d", "shop", "w", &no), meta("e", "shop", "", nil), meta("f", "elsewhere", "w", &yes),
	} {
		objs = append(objs, &appsv1.ReplicaSet{ObjectMeta: m}, &appsv1.ControllerRevision{ObjectMeta: m})
	}
	cs := fake.NewClientset(objs...)
	rs, err := kubetest.OwnedReplicaSets(ctx, cs, "shop", "w")
	require.NoError(t, err)
	revs, err := kubetest.OwnedControllerRevisions(ctx, cs, "shop", "w")
	require.NoError(t, err)
	var got [2][]string
	for _, r := range rs {
		got[0] = append(got[0], r.Name)
	}
	for _, r := range revs {
		got[1] = append(got[1], r.Name)
	}
	assert.Equal(t, [2][]string{{"a", "b"}, {"a", "b"}}, got)
}
