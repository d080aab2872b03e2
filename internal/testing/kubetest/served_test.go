package kubetest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"

	"github.com/confighash/confighash/internal/testing/kubetest"
)

// TestWaitDiscovered: discovery that lists a new kind only from its third
// look on (as the API server's discovery lags a new CRD's REST handler).
// One Reset is not enough; WaitDiscovered returns once the mapper maps it.
func TestWaitDiscovered(t *testing.T) {
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true}}}}
	looks := 0
	disc.AddReactor("get", "group", func(clienttesting.Action) (bool, runtime.Object, error) {
		looks++
		if looks == 3 {
			disc.Resources = append(disc.Resources, &metav1.APIResourceList{GroupVersion: "argoproj.io/v1alpha1",
				APIResources: []metav1.APIResource{{Name: "rollouts", Kind: "Rollout", Namespaced: true}}})
		}
		return false, nil, nil
	})
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	gvk := schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}

	mapper.Reset()
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	require.Error(t, err, "not yet listed: one Reset and a look fail")

	kubetest.WaitDiscovered(t, mapper, gvk)
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	require.NoError(t, err)
	assert.Equal(t, "rollouts", m.Resource.Resource)
	assert.GreaterOrEqual(t, looks, 3)
}
