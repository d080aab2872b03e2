package kubetest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/restmapper"
)

// WaitDiscovered waits until discovery lists gvk, resetting mapper before
// each look, so that Apply (and a controller that finds kinds by
// discovery) can map it. A new CRD is served by its REST handler a moment
// before the API server's discovery document lists it: a List through the
// dynamic client can succeed while a mapper, reset right after, still
// answers "no matches for kind".
func WaitDiscovered(t testing.TB, mapper *restmapper.DeferredDiscoveryRESTMapper, gvk schema.GroupVersionKind) {
	t.Helper()
	Eventually(t, 30*time.Second, 200*time.Millisecond, gvk.Kind+" in discovery", func(context.Context) (bool, error) {
		mapper.Reset()
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil, err
	})
}
