package controlplane

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// pollInterval is the delay between readiness probes.
const pollInterval = 100 * time.Millisecond

// poll calls check every pollInterval until it succeeds or ctx ends; the
// error names what was awaited and the last probe's error.
func poll(ctx context.Context, what string, check func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		last = check(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("controlplane: wait for %s: %w (last probe: %w)", what, err, last)
	}
	return nil
}

// WaitAPIServerReady polls the apiserver's /readyz until it returns 200.
func (cp *ControlPlane) WaitAPIServerReady(ctx context.Context) error {
	cs, err := cp.clientset()
	if err != nil {
		return err
	}
	return poll(ctx, "kube-apiserver /readyz", func(ctx context.Context) error {
		return cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	})
}

// clientset returns an admin clientset.
func (cp *ControlPlane) clientset() (*kubernetes.Clientset, error) {
	cs, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		return nil, fmt.Errorf("controlplane: kube-apiserver client: %w", err)
	}
	return cs, nil
}

// waitDefaultNamespace waits until the apiserver has created the default
// namespace.
func (cp *ControlPlane) waitDefaultNamespace(ctx context.Context) error {
	cs, err := cp.clientset()
	if err != nil {
		return err
	}
	return poll(ctx, "the default namespace", func(ctx context.Context) error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return err
	})
}

// waitWorkloadsAdmitted waits until the default ServiceAccount exists (when
// its controller is enabled; Pods are rejected without it) and a Deployment
// passes admission in the default namespace (server-side dry run).
func (cp *ControlPlane) waitWorkloadsAdmitted(ctx context.Context) error {
	cs, err := cp.clientset()
	if err != nil {
		return err
	}
	for _, c := range cp.opts.Controllers {
		if c != "serviceaccount-controller" && c != "*" {
			continue
		}
		err := poll(ctx, "the default ServiceAccount", func(ctx context.Context) error {
			_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
			return err
		})
		if err != nil {
			return err
		}
		break
	}
	return poll(ctx, "a dry-run Deployment create", func(ctx context.Context) error {
		_, err := cs.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, probeDeployment(),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
}

// probeDeployment is the Deployment used to check admission during Start.
func probeDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "controlplane-probe"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "controlplane-probe"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "probe", Image: "registry.invalid/probe:1"},
				}},
			},
		},
	}
}

// WriteKubeconfig writes a self-contained kubeconfig file (inline CA and
// credentials) for cfg, with a single context named "confighash".
func WriteKubeconfig(cfg *rest.Config, path string) error {
	const name = "confighash"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("controlplane: write kubeconfig %s: %w", path, err)
	}
	return nil
}
