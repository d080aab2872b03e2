package status

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
)

// argoRollout is the part of an Argo Rollout status reads: its pod
// template, as the controller manages it, and its progress.
type argoRollout struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Replicas *int32                 `json:"replicas"`
		Template corev1.PodTemplateSpec `json:"template"`
	} `json:"spec"`
	Status struct {
		// ObservedGeneration is a string in Argo Rollouts' API.
		ObservedGeneration json.RawMessage `json:"observedGeneration"`
		Replicas           int32           `json:"replicas"`
		UpdatedReplicas    int32           `json:"updatedReplicas"`
		AvailableReplicas  int32           `json:"availableReplicas"`
		Phase              string          `json:"phase"`
		Message            string          `json:"message"`
	} `json:"status"`
}

// listArgoRollouts lists the Argo Rollouts of namespace (all when empty);
// served is false, with no error, when the cluster serves no Rollouts.
// The clientset's discovery REST client reads them, so status needs no
// dynamic client.
func listArgoRollouts(ctx context.Context, cs kubernetes.Interface, namespace string) (rollouts []argoRollout, served bool, err error) {
	rc := cs.Discovery().RESTClient()
	if c, ok := rc.(*rest.RESTClient); rc == nil || (ok && c == nil) {
		return nil, false, nil // a fake clientset
	}
	gv := controller.RolloutGVK.GroupVersion()
	p := path.Join("/apis", gv.Group, gv.Version, "rollouts")
	if namespace != "" {
		p = path.Join("/apis", gv.Group, gv.Version, "namespaces", namespace, "rollouts")
	}
	raw, err := rc.Get().AbsPath(p).Do(ctx).Raw()
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case apierrors.IsForbidden(err):
		// RBAC answers before the API server looks the resource up: a user
		// who may not list Rollouts is refused on a cluster that serves
		// none too, where there is nothing to list. Discovery tells.
		if _, derr := cs.Discovery().ServerResourcesForGroupVersion(gv.String()); apierrors.IsNotFound(derr) {
			return nil, false, nil
		}
		return nil, true, serverStatus(raw, err)
	case err != nil:
		return nil, true, err
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, true, fmt.Errorf("reading the list of Rollouts: %w", err)
	}
	for _, item := range list.Items {
		var r argoRollout
		if err := json.Unmarshal(item, &r); err != nil {
			var meta struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			_ = json.Unmarshal(item, &meta)
			return nil, true, fmt.Errorf("Rollout %s: %w", hashing.ObjectName(meta.Metadata.Namespace, meta.Metadata.Name), err)
		}
		rollouts = append(rollouts, r)
	}
	return rollouts, true, nil
}

// serverStatus is the API server's error in body (a Status, whose message
// names the user, verb and resource), or err when body holds none: the
// discovery client this reads with does not decode it ("unknown").
func serverStatus(body []byte, err error) error {
	var st metav1.Status
	if json.Unmarshal(body, &st) != nil || st.Kind != "Status" || st.Message == "" {
		return err
	}
	return apierrors.FromObject(&st)
}

// progress is the Rollout's progress from its status: Argo Rollouts
// reports the phase, and replicas not updated yet run an older template.
func (r *argoRollout) progress() Rollout {
	st := r.Status
	out := Rollout{Generation: r.Generation, ObservedGeneration: observedGeneration(st.ObservedGeneration, r.Generation),
		Replicas: replicas(r.Spec.Replicas), Updated: st.UpdatedReplicas, Available: st.AvailableReplicas, Pods: int(st.Replicas)}
	out.StalePods = max(0, int(st.Replicas-st.UpdatedReplicas))
	out.finish(st.Phase == "Healthy" && out.ObservedGeneration >= out.Generation)
	switch {
	case st.Phase != "" && st.Message != "":
		out.Message += "; phase " + st.Phase + ": " + st.Message
	case st.Phase != "":
		out.Message += "; phase " + st.Phase
	default:
		out.Message += "; no phase reported (is the Argo Rollouts controller running?)"
	}
	return out
}

// observedGeneration reads Argo's observedGeneration, a string ("3"), or a
// number: 0 when absent. Versions before 1.0 wrote a hash of the spec
// there, not a generation: the Rollout counts as observed (generation).
func observedGeneration(raw json.RawMessage, generation int64) int64 {
	if len(raw) == 0 || string(raw) == "null" {
		return 0
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return 0
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
		return generation
	}
	var n int64
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	return generation
}
