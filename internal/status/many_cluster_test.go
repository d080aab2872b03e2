package status_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/confighash/confighash/internal/status"
	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/kubetest"
)

// TestStatusOfManyWorkloads runs the command on a namespace of 40 opted-in
// Deployments reading two ConfigMaps each: about five requests a workload,
// one after the other. client-go's default client-side limit (5 requests a
// second after a burst of 10) made that take 40 s, past the default
// --request-timeout of 30 s, so status printed nothing but "context deadline
// exceeded" (argo-cd's seven workloads took 7.5 s for 58 requests). With
// --request-timeout 10s the report must be complete.
func TestStatusOfManyWorkloads(t *testing.T) {
	cptest.Require(t)
	cp := cptest.Private(t)
	cs, err := kubernetes.NewForConfig(cp.RESTConfig())
	require.NoError(t, err)
	const namespace, workloads = "many", 40
	_, err = cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, name := range []string{"a", "b"} {
		_, err := cs.CoreV1().ConfigMaps(namespace).Create(t.Context(),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"K": name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for i := range workloads {
		d := kubetest.Deployment(fmt.Sprintf("app-%02d", i), 0, nil, []corev1.EnvFromSource{kubetest.FromConfigMap("a"), kubetest.FromConfigMap("b")})
		d.Annotations = map[string]string{"confighash.dev/enabled": "true"}
		_, err := cs.AppsV1().Deployments(namespace).Create(t.Context(), d, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	var out, errb bytes.Buffer
	code := status.Main([]string{"status", "--kubeconfig", cp.KubeconfigPath(), "-n", namespace, "--json", "--request-timeout", "10s"},
		&out, &errb, func(string) string { return "" })
	require.Zero(t, code, "kubectl confighash status: %s", errb.String())
	var report status.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &report))
	assert.Len(t, report.Workloads, workloads)
	for _, w := range report.Workloads {
		assert.Equal(t, status.ConfigCurrent, w.Config, w.Name)
	}

	// kubectl's -o json is --json.
	var outO bytes.Buffer
	errb.Reset()
	code = status.Main([]string{"status", "--kubeconfig", cp.KubeconfigPath(), "-n", namespace, "-o", "json"},
		&outO, &errb, func(string) string { return "" })
	require.Zero(t, code, "kubectl confighash status -o json: %s", errb.String())
	var reportO status.Report
	require.NoError(t, json.Unmarshal(outO.Bytes(), &reportO))
	for _, r := range []*status.Report{&report, &reportO} {
		for i := range r.Workloads {
			r.Workloads[i].Rollout = status.Rollout{} // the Deployment controller may have moved on
		}
	}
	assert.Equal(t, report, reportO)
}
