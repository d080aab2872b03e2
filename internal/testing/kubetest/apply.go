package kubetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Clients returns the typed and dynamic clients of cfg and the REST mapper
// Apply needs, which finds kinds by discovery (a CRD created later too,
// once the mapper is Reset).
func Clients(t testing.TB, cfg *rest.Config) (*kubernetes.Clientset, *dynamic.DynamicClient, *restmapper.DeferredDiscoveryRESTMapper) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, dyn, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
}

// ApplyOptions say how Apply applies a stream.
type ApplyOptions struct {
	// Namespace is given to namespaced objects that name none.
	Namespace string
	// FieldManager owns the applied fields; the apply is forced, the way
	// Argo CD and Flux apply.
	FieldManager string
	// BeforeNamespaced, when set, runs before each namespaced object is
	// applied, with its namespace (to create a missing one, say).
	BeforeNamespaced func(ctx context.Context, namespace string) error
	// Applied, when set, runs after each object is applied.
	Applied func(u *unstructured.Unstructured)
}

// Apply server-side applies every document of a YAML or JSON stream, in
// order; empty documents are skipped. The mapper resolves each kind to its
// resource.
func Apply(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, stream io.Reader, opts ApplyOptions) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(stream, 4096)
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if len(doc) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: doc}
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
		}
		var res dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if u.GetNamespace() == "" {
				u.SetNamespace(opts.Namespace)
			}
			if opts.BeforeNamespaced != nil {
				if err := opts.BeforeNamespaced(ctx, u.GetNamespace()); err != nil {
					return err
				}
			}
			res = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		if _, err := res.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: opts.FieldManager, Force: true}); err != nil {
			return fmt.Errorf("applying %s %s: %w", gvk.Kind, u.GetName(), err)
		}
		if opts.Applied != nil {
			opts.Applied(u)
		}
	}
}
