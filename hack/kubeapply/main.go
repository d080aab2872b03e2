// Command kubeapply is the little kubectl the demo needs (kubectl is not
// installed on these machines): server-side apply of a YAML stream, an
// out-of-band edit of a ConfigMap key, and listings of a Deployment's
// ReplicaSets and Events.
//
//	kubeapply --kubeconfig F apply < stream.yaml
//	kubeapply --kubeconfig F set-data NAMESPACE CONFIGMAP KEY VALUE
//	kubeapply --kubeconfig F replicasets NAMESPACE DEPLOYMENT [--wait N]
//	kubeapply --kubeconfig F events NAMESPACE NAME
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/confighash/confighash/internal/testing/kubetest"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kubeapply:", err)
		os.Exit(1)
	}
}

func run(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("kubeapply", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	manager := fs.String("field-manager", "kubeapply", "field manager of applies and edits")
	wait := fs.Int("wait", 0, "replicasets: wait until there are at least this many")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := fs.Args()
	need := func(n int) error {
		if len(a) != n {
			return fmt.Errorf("%s wants %d arguments", a[0], n-1)
		}
		return nil
	}
	if len(a) == 0 {
		return errors.New("want a command: apply, set-data, replicasets or events")
	}
	switch a[0] {
	case "apply":
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		return apply(ctx, cs, dyn, in, out, *manager)
	case "set-data":
		if err := need(5); err != nil {
			return err
		}
		patch, _ := json.Marshal(map[string]any{"data": map[string]string{a[3]: a[4]}})
		_, err := cs.CoreV1().ConfigMaps(a[1]).Patch(ctx, a[2], types.MergePatchType, patch, metav1.PatchOptions{FieldManager: *manager})
		if err == nil {
			fmt.Fprintf(out, "configmap %s/%s: key %s edited\n", a[1], a[2], a[3])
		}
		return err
	case "replicasets":
		if err := need(3); err != nil {
			return err
		}
		return replicaSets(ctx, cs, out, a[1], a[2], *wait)
	case "events":
		if err := need(3); err != nil {
			return err
		}
		return events(ctx, cs, out, a[1], a[2])
	}
	return fmt.Errorf("unknown command %q", a[0])
}

// apply server-side applies each document, creating missing namespaces.
func apply(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, in io.Reader, out io.Writer, manager string) error {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	return kubetest.Apply(ctx, dyn, mapper, in, kubetest.ApplyOptions{
		Namespace:    "default",
		FieldManager: manager,
		BeforeNamespaced: func(ctx context.Context, ns string) error {
			return ensureNamespace(ctx, cs, ns)
		},
		Applied: func(u *unstructured.Unstructured) {
			fmt.Fprintf(out, "%s/%s applied\n", u.GetKind(), u.GetName())
		},
	})
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// replicaSets lists the ReplicaSets a Deployment controls, oldest first,
// after waiting for at least wait of them.
func replicaSets(ctx context.Context, cs kubernetes.Interface, out io.Writer, ns, name string, wait int) error {
	for {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		owned, err := kubetest.OwnedReplicaSets(ctx, cs, ns, d.UID)
		if err != nil {
			return err
		}
		var rows [][]string
		for _, rs := range owned {
			rows = append(rows, []string{rs.CreationTimestamp.UTC().Format(time.RFC3339), rs.Name,
				rs.Annotations["deployment.kubernetes.io/revision"], strconv.Itoa(int(rs.Status.Replicas)),
				short(rs.Spec.Template.Annotations["confighash.dev/hash"]), short(rs.Spec.Template.Annotations["confighash.dev/controller-hash"])})
		}
		if len(rows) >= wait {
			sort.Slice(rows, func(i, j int) bool { return rows[i][2] < rows[j][2] })
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CREATED\tREPLICASET\tREVISION\tREPLICAS\tRENDER HASH\tCONTROLLER HASH")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r[0], r[1], r[2], r[3], r[4], r[5])
			}
			return tw.Flush()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deployment %s/%s has %d ReplicaSets, waited for %d: %w", ns, name, len(rows), wait, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// short abbreviates a hash value for a table.
func short(h string) string {
	if len(h) > 22 {
		return h[:22] + "…"
	}
	if h == "" {
		return "-"
	}
	return h
}

// events prints the events.k8s.io Events about an object.
func events(ctx context.Context, cs kubernetes.Interface, out io.Writer, ns, name string) error {
	list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tREASON\tOBJECT\tFROM\tMESSAGE")
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			fmt.Fprintf(tw, "%s\t%s\t%s/%s\t%s\t%s\n", e.Type, e.Reason, e.Regarding.Kind, e.Regarding.Name, e.ReportingController, e.Note)
		}
	}
	return tw.Flush()
}
