package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/yamlnode"
)

// recorderName is the reporting controller of the controller's Events.
const recorderName = controllerName + "-controller"

// Run builds the manager and runs it until ctx is done.
//
// In auto mode for Argo Rollouts, Run asks discovery every
// ArgoRolloutsRecheck whether the API server serves the Rollout CRD; when
// the answer changes, Run stops the manager and sets up a new one, with
// Rollouts or without: Argo Rollouts installed after confighash, or
// removed, needs no restart. The new manager starts from live state, as
// any start does (a config edited in between rolls its workloads).
//
// Like the rest of the package it reads no flag, environment variable or
// in-pod file and sets no process-wide logger: confighash-controller
// (internal/controllercmd) does, and hands in plain options with a Logger.
func Run(ctx context.Context, opts Options) error {
	for {
		mgr, r, err := NewManager(opts)
		if err != nil {
			return err
		}
		managed := r.kinds[RolloutGVK.Kind] != nil
		if r.opts.ArgoRollouts == ArgoRolloutsAuto {
			w := &rolloutWatch{config: mgr.GetConfig(), client: mgr.GetHTTPClient(), every: r.opts.ArgoRolloutsRecheck, served: managed, log: r.log}
			if err := mgr.Add(w); err != nil {
				return fmt.Errorf("adding the Argo Rollouts recheck: %w", err)
			}
		}
		err = mgr.Start(ctx)
		if !errors.Is(err, errRolloutsChanged) || ctx.Err() != nil {
			return err
		}
		if managed {
			r.log.Info("Argo Rollouts' CRD is no longer served: setting up again without Rollouts")
		} else {
			r.log.Info("Argo Rollouts' CRD is served now: setting up again to manage Rollouts too")
		}
	}
}

// NewManager builds a controller-runtime manager with the confighash
// controller set up, from completed or raw options. It first asks the API
// server whether its credentials may list and watch what it caches (and
// patch the workloads, unless in a dry run), and fails with what is
// missing if not. It logs to
// opts.Logger (unset: controller-runtime's logger). With LeaderElect and no
// LeaderElectionNamespace the Lease goes to the pod's namespace, which
// controller-runtime finds only in a pod.
func NewManager(opts Options) (manager.Manager, *Reconciler, error) {
	opts, err := opts.Complete()
	if err != nil {
		return nil, nil, err
	}
	opts.stores = newStores()
	cfg, err := RESTConfig(opts)
	if err != nil {
		return nil, nil, err
	}
	if opts.accessReviews, err = checkAccess(context.Background(), cfg, opts.Namespaces, opts.DryRun); err != nil {
		return nil, nil, err
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, nil, err
	}
	mgr, err := manager.New(cfg, managerOptions(opts, scheme))
	if err != nil {
		return nil, nil, fmt.Errorf("creating the manager: %w", err)
	}
	evc, err := eventsv1client.NewForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return nil, nil, fmt.Errorf("creating the Events client: %w", err)
	}
	opts.events = newEventRecorder(evc, mgr.GetScheme(), recorderName, mgr.GetLogger().WithName("events"))
	r, err := Setup(mgr, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	return mgr, r, nil
}

// newScheme registers the API groups the controller reads, writes and
// names in Events (core, apps, batch, events, coordination), not every
// group client-go knows: a scheme's type tables are held for the life of
// the process.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, eventsv1.AddToScheme, coordinationv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	return scheme, nil
}

// RESTConfig is the client configuration of the controller: opts.RESTConfig
// (copied) or the kubeconfig, with the client-side rate limit of
// opts.KubeAPIQPS and opts.KubeAPIBurst. Without one (zero), a configuration
// that sets no rate of its own gets none (QPS -1), as controller-runtime's
// config.GetConfig gives: the API server's Priority and Fairness paces the
// requests, instead of client-go's default of 5 per second.
func RESTConfig(opts Options) (*rest.Config, error) {
	var cfg *rest.Config
	if opts.RESTConfig != nil {
		cfg = rest.CopyConfig(opts.RESTConfig)
	} else {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = opts.Kubeconfig
		var err error
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the kubeconfig: %w", yamlnode.HideQuoted(err))
		}
	}
	switch {
	case opts.KubeAPIQPS > 0:
		cfg.QPS, cfg.Burst = float32(opts.KubeAPIQPS), opts.KubeAPIBurst
		if cfg.Burst <= 0 {
			cfg.Burst = max(1, int(math.Ceil(2*opts.KubeAPIQPS)))
		}
	case opts.KubeAPIQPS < 0 || cfg.QPS == 0:
		cfg.QPS = -1
	}
	return cfg, nil
}

// CacheOptions are the cache settings of the controller: workloads cached
// in the form TransformWorkload gives, ConfigMaps and Secrets as per-key
// digests, and the namespaces of opts. In the controller's own cache
// (NewManager), whose stores it reads, ConfigMaps and Secrets are cached as
// a type of its own too; in any other (opts not from NewManager), as the
// API types with the digests in place of the values (TransformConfigMap,
// TransformSecret), which controller-runtime's typed reader returns.
func CacheOptions(opts Options) cache.Options {
	co := cache.Options{
		DefaultTransform: TransformWorkload,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Transform: TransformConfigMap},
			&corev1.Secret{}:    {Transform: TransformSecret},
		},
	}
	if opts.stores != nil {
		co.NewInformer = opts.stores.newInformer
		co.ByObject = map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Transform: cacheConfig},
			&corev1.Secret{}:    {Transform: cacheConfig},
		}
	}
	co.DefaultWatchErrorHandler = watchErrorHandler(opts.Logger)
	if len(opts.Namespaces) > 0 {
		co.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.Namespaces {
			co.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return co
}

// watchErrorHandler reports, on the controller's logger, a cache that may
// no longer list or watch what it holds: a Role or binding changed under
// the running controller. The API server checks a watch when it starts, so
// the loss shows when the watch next ends; from then on the cache keeps the
// objects as last seen, and their edits are acted on only once the
// permission is back and the cache lists them again. Other watch errors
// are client-go's to report. Without it the denial went to
// controller-runtime's process-wide logger, which a program embedding the
// controller with a Logger of its own may not read. Without a Logger,
// nil: client-go's handler, on controller-runtime's logger.
func watchErrorHandler(log logr.Logger) toolscache.WatchErrorHandlerWithContext {
	if log.GetSink() == nil {
		return nil
	}
	log = log.WithName(controllerName)
	return func(ctx context.Context, r *toolscache.Reflector, err error) {
		if !apierrors.IsForbidden(err) {
			toolscache.DefaultWatchErrorHandler(ctx, r, err)
			return
		}
		log.Error(err, "not allowed to list or watch; edits of these objects are not seen until the permission is restored "+
			"(config/namespaced/role.yaml, config/clusterrole.yaml)", "type", r.TypeDescription())
	}
}

func managerOptions(opts Options, scheme *runtime.Scheme) manager.Options {
	co := CacheOptions(opts)
	return manager.Options{
		Scheme:                        scheme,
		Logger:                        quietLeaseRelease(opts.Logger),
		Cache:                         co,
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsBindAddress, HandlerOpts: []func(*promhttp.HandlerOpts){plainMetrics}},
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		PprofBindAddress:              opts.PprofBindAddress,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr.To(opts.LeaseDuration),
		RenewDeadline:                 ptr.To(opts.RenewDeadline),
		RetryPeriod:                   ptr.To(opts.RetryPeriod),
	}
}

// plainMetrics serves /metrics uncompressed whatever the scraper accepts:
// the page is a few tens of kilobytes, and each gzip writer promhttp pools
// is about 1 MB of heap held between scrapes (a fifth of what 5,000
// workloads cost).
func plainMetrics(o *promhttp.HandlerOpts) { o.DisableCompression = true }

// Setup adds the controller and its watches to mgr. opts must be
// completed, and mgr's cache built with CacheOptions(opts): NewManager does
// both. Without NewManager, the cached workloads are read through mgr's
// client reader, which cannot return their cached form (TransformWorkload).
func Setup(mgr manager.Manager, opts Options) (*Reconciler, error) {
	reg := opts.Registry
	if reg == nil {
		reg = crmetrics.Registry
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	m.accessReviews.Add(float64(opts.accessReviews))
	kinds := builtinKinds()
	if k, err := rolloutKind(mgr, opts); err != nil {
		return nil, err
	} else if k != nil {
		kinds = append(kinds, k)
	}
	log := mgr.GetLogger().WithName(controllerName)
	var rec EventRecorder = mgr.GetEventRecorder(recorderName)
	if opts.events != nil {
		rec = opts.events
	}
	r := newReconciler(mgr.GetCache(), mgr.GetClient(), rec, kinds, m, opts, log)
	if opts.events != nil {
		if err := mgr.Add(flusher{events: opts.events, busy: func() bool { return r.active.Load() > 0 }}); err != nil {
			return nil, fmt.Errorf("adding the Event flush: %w", err)
		}
	}
	b := builder.TypedControllerManagedBy[Request](mgr).
		Named(controllerName).
		WithOptions(ctrlcontroller.TypedOptions[Request]{
			MaxConcurrentReconciles: opts.Concurrency,
			SkipNameValidation:      ptr.To(true),
			RateLimiter:             retryLimiter(),
		}).
		WithLogConstructor(func(req *Request) logr.Logger {
			if req == nil {
				return log
			}
			return log.WithValues("kind", req.Kind, "namespace", req.Namespace, "name", req.Name)
		})
	for _, k := range r.sortedKinds() {
		b = b.WatchesRawSource(&syncedSource{
			TypedSyncingSource: source.TypedKind[client.Object, Request](mgr.GetCache(), k.newObject(), r.workloadHandler(k)),
			synced:             r.consumers.synced[k],
		})
	}
	b = b.WatchesRawSource(source.TypedKind[client.Object, Request](mgr.GetCache(), &corev1.ConfigMap{}, r.configHandler(hashing.KindConfigMap)))
	b = b.WatchesRawSource(source.TypedKind[client.Object, Request](mgr.GetCache(), &corev1.Secret{}, r.configHandler(hashing.KindSecret)))
	if err := b.Complete(r); err != nil {
		return nil, fmt.Errorf("building the controller: %w", err)
	}
	names := make([]string, 0, len(kinds))
	for _, k := range r.sortedKinds() {
		names = append(names, k.Name)
	}
	log.Info("set up", "kinds", names, "namespaces", opts.Namespaces, "dryRun", opts.DryRun,
		"prefix", opts.AnnotationPrefix, "keyed", len(opts.Key) > 0,
		"coalesceWindow", opts.CoalesceWindow.String(), "minRollInterval", opts.MinRollInterval.String())
	return r, nil
}

// rolloutKind returns the Argo Rollout kind when it should be managed: when
// enabled, or in auto mode when the API server serves it (checked when the
// manager is set up; Run sets one up again when the CRD comes or goes).
func rolloutKind(mgr manager.Manager, opts Options) (*workloadKind, error) {
	if opts.ArgoRollouts == ArgoRolloutsDisabled {
		return nil, nil
	}
	_, err := mgr.GetRESTMapper().RESTMapping(RolloutGVK.GroupKind(), RolloutGVK.Version)
	switch {
	case err == nil:
		return unstructuredKind(RolloutGVK, "spec", "template"), nil
	case meta.IsNoMatchError(err) && opts.ArgoRollouts == ArgoRolloutsAuto:
		return nil, nil
	}
	return nil, fmt.Errorf("argo rollouts (%s): %w", RolloutGVK, err)
}

// maxRetryDelay is the longest wait before a failed reconcile is tried
// again.
const maxRetryDelay = 2 * time.Minute

// retryLimiter paces the retries of a reconcile that failed (a patch the API
// server refused, say) as controller-runtime's default does, 5 ms doubling
// at each failure, with the same overall bucket, but at most maxRetryDelay
// apart instead of about 16 minutes: a permission restored after a long
// revocation is used within two minutes.
func retryLimiter() workqueue.TypedRateLimiter[Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[Request](5*time.Millisecond, maxRetryDelay),
		&workqueue.TypedBucketRateLimiter[Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}
