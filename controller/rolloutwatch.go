package controller

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// errRolloutsChanged stops a manager set up in auto mode once Argo
// Rollouts' CRD has come or gone: Run sets up a new one.
var errRolloutsChanged = errors.New("argo rollouts' CRD came or went")

// rolloutWatch asks discovery every so often whether the API server serves
// Argo Rollouts' Rollout kind, and returns errRolloutsChanged once the
// answer is no longer served (the manager manages Rollouts and their CRD
// was removed) or served (it does not, and the CRD was installed). An
// error other than NotFound answers nothing. It runs on every replica,
// leader or not, so a standby that takes over manages what the leader
// does.
type rolloutWatch struct {
	config *rest.Config
	client *http.Client // the manager's, so the recheck reuses its connections
	every  time.Duration
	served bool
	log    logr.Logger
}

func (w *rolloutWatch) NeedLeaderElection() bool { return false }

func (w *rolloutWatch) Start(ctx context.Context) error {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(w.config, w.client)
	if err != nil {
		return err
	}
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		served, err := servesKind(dc, RolloutGVK.GroupVersion().String(), RolloutGVK.Kind)
		if err != nil && !apierrors.IsNotFound(err) {
			w.log.V(1).Info("asking whether Argo Rollouts' CRD is served", "error", err.Error())
			continue
		}
		if served != w.served {
			return errRolloutsChanged
		}
	}
}

// servesKind reports whether discovery lists kind in groupVersion; a
// group version not served at all is a NotFound error.
func servesKind(dc discovery.DiscoveryInterface, groupVersion, kind string) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Kind == kind {
			return true, nil
		}
	}
	return false, nil
}
