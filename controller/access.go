package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// accessCheckTimeout bounds the start-up check of the controller's
// permissions; a check that cannot be made in time is skipped. A denial is
// asked again every accessRetry for accessGrace before it is final.
const (
	accessCheckTimeout = 30 * time.Second
	accessGrace        = 5 * time.Second
	accessRetry        = 500 * time.Millisecond
)

// needed are the resources the controller's caches list and watch, and
// the verbs it uses on each: the workloads are patched too, unless in a dry
// run (Argo Rollouts are watched only when served, and found by discovery).
func needed(dryRun bool) []need {
	workload := []string{"list", "watch", "patch"}
	if dryRun {
		workload = workload[:2]
	}
	config := []string{"list", "watch"}
	return []need{
		{authzv1.ResourceAttributes{Resource: "configmaps"}, config},
		{authzv1.ResourceAttributes{Resource: "secrets"}, config},
		{authzv1.ResourceAttributes{Group: "apps", Resource: "deployments"}, workload},
		{authzv1.ResourceAttributes{Group: "apps", Resource: "statefulsets"}, workload},
		{authzv1.ResourceAttributes{Group: "apps", Resource: "daemonsets"}, workload},
		{authzv1.ResourceAttributes{Group: "batch", Resource: "cronjobs"}, workload},
	}
}

// need is a resource and the verbs the controller uses on it.
type need struct {
	resource authzv1.ResourceAttributes
	verbs    []string
}

// errNoAccess is the error of a controller whose credentials cannot list
// or watch what it caches, or patch the workloads.
var errNoAccess = errors.New("the controller's credentials lack permissions it needs")

// checkAccess asks the API server (SelfSubjectAccessReview, which every
// authenticated user may make) whether the controller may list and watch
// each resource its caches hold, and patch the workloads unless dryRun, in
// every namespace of namespaces (all when none). Without that the caches
// never fill and the controller would wait for them, saying nothing a user
// can act on; this says what is missing and what to do. A denial is asked
// again for accessGrace, since the API server's authorizer learns of a Role
// or binding created a moment ago (an install that applies them with the
// controller) a little later. A review that cannot be made (an older API
// server, a policy that forbids reviews) skips the check: the caches then
// report. reviews is how many reviews were asked (requests that write
// nothing).
func checkAccess(ctx context.Context, cfg *rest.Config, namespaces []string, dryRun bool) (reviews int, err error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, nil //nolint:nilerr // no check possible; the manager reports a bad configuration
	}
	ctx, cancel := context.WithTimeout(ctx, accessCheckTimeout)
	defer cancel()
	deadline := time.Now().Add(accessGrace)
	for {
		denied, n, err := deniedAccess(ctx, cs, namespaces, dryRun)
		reviews += n
		if err != nil {
			return reviews, nil //nolint:nilerr // no check possible: the caches report what they cannot read
		}
		if len(denied) == 0 {
			return reviews, nil
		}
		if time.Now().After(deadline) {
			hint := "grant the ClusterRole of config/ (config/clusterrole.yaml), or watch only the namespaces it may read: --namespaces=a,b (Options.Namespaces) with the Role of config/namespaced in each"
			if len(namespaces) > 0 {
				hint = "grant the Role of config/namespaced (config/namespaced/role.yaml) in each namespace of --namespaces, or drop the namespaces it may not read"
			}
			return reviews, fmt.Errorf("%w: not allowed to %s; %s", errNoAccess, strings.Join(denied, "; "), hint)
		}
		select {
		case <-ctx.Done():
			return reviews, nil
		case <-time.After(accessRetry):
		}
	}
}

// deniedAccess makes one round of reviews and says what is denied, as
// "verbs resource in scope"; n is how many reviews it made, err a review
// that could not be made.
func deniedAccess(ctx context.Context, cs kubernetes.Interface, namespaces []string, dryRun bool) (denied []string, n int, err error) {
	scopes := namespaces
	if len(scopes) == 0 {
		scopes = []string{""}
	}
	for _, ns := range scopes {
		for _, need := range needed(dryRun) {
			var verbs []string
			for _, verb := range need.verbs {
				attrs := need.resource
				attrs.Namespace, attrs.Verb = ns, verb
				review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
					&authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
				n++
				if err != nil {
					return nil, n, err
				}
				if !review.Status.Allowed {
					verbs = append(verbs, verb)
				}
			}
			if len(verbs) > 0 {
				denied = append(denied, fmt.Sprintf("%s %s in %s", strings.Join(verbs, ", "), qualified(need.resource), scopeName(ns)))
			}
		}
	}
	return denied, n, nil
}

// qualified names a resource with its API group, as RBAC rules do.
func qualified(res authzv1.ResourceAttributes) string {
	if res.Group == "" {
		return res.Resource
	}
	return res.Resource + "." + res.Group
}

func scopeName(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}
