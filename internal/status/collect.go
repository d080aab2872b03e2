package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/annotations"
	"github.com/confighash/confighash/internal/hmackey"
	"github.com/confighash/confighash/internal/output"
)

// Options select the workloads and how hashes are computed.
type Options struct {
	// Namespace to report on; empty with AllNamespaces for every namespace.
	Namespace     string
	AllNamespaces bool
	// Prefix of the annotations; the default when empty.
	Prefix string
	// Key is the controller's HMAC key, when it runs in keyed mode.
	Key []byte
}

// Config states of a workload.
const (
	// ConfigCurrent: the pod template is current for the live configs; the
	// controller would do nothing (or only record a baseline).
	ConfigCurrent = "current"
	// ConfigStale: the controller would roll the workload now.
	ConfigStale = "stale"
	// ConfigBlocked: a required config is missing; the controller waits.
	ConfigBlocked = "blocked"
	// ConfigUnknown: a consumed config could not be read with the user's
	// credentials (RBAC), so nothing can be said about the config.
	ConfigUnknown = "unknown"
)

// ErrKeyMismatch is the error Collect returns, next to a full report, when
// the render-time hash of some workloads was made in another HMAC mode (or
// with another key) than status was given: their config is unknown, as
// comparing would be a wrong answer.
var ErrKeyMismatch = errors.New("render-time hashes status cannot check with the HMAC key it was given")

// ErrUnreadable is the error Collect returns, next to a full report, when
// the API server forbade reading some objects the report is made of (a
// consumed config, the Events, the pods): the user's RBAC.
var ErrUnreadable = errors.New("not allowed to read everything the status is made of")

// Report is the status of the managed workloads.
type Report struct {
	Workloads []Workload `json:"workloads"`
	// where says what was read, for the table: a namespace, or every one.
	where string
}

// Workload is the status of one managed workload.
type Workload struct {
	output.Ref
	// Configs are what the pods consume, as the controller watches them.
	Configs []Config `json:"configs"`
	// RenderHash is the render-time annotation; ControllerHash the
	// controller's record; LiveHash every consumed config's live content.
	RenderHash     string `json:"renderHash,omitempty"`
	ControllerHash string `json:"controllerHash,omitempty"`
	LiveHash       string `json:"liveHash"`
	// Config is current, stale or blocked; Reason the controller's reason
	// (controller.Decide); Changed and Missing name configs.
	Config  string   `json:"config"`
	Reason  string   `json:"reason"`
	Changed []string `json:"changed,omitempty"`
	Missing []string `json:"missing,omitempty"`
	// Unreadable names the consumed configs (Kind/name) the user's
	// credentials may not read; Config is then unknown.
	Unreadable []string `json:"unreadable,omitempty"`
	// KeyMismatch says why the render-time hash cannot be checked with
	// status's HMAC key (hashing.MismatchKeyed, MismatchUnkeyed,
	// MismatchOtherKey, MismatchUnknown); Config is then unknown.
	// RenderKeyID is the render's key id, for MismatchOtherKey.
	KeyMismatch hashing.Mismatch `json:"keyMismatch,omitempty"`
	RenderKeyID string           `json:"renderKeyID,omitempty"`
	// Rollout is the progress of the workload's own controller.
	Rollout Rollout `json:"rollout"`
	// LastConfigChanged is the newest ConfigChanged Event on the workload.
	LastConfigChanged *Event `json:"lastConfigChanged,omitempty"`
	// EventsUnreadable is true when the user may not list Events.
	EventsUnreadable bool `json:"eventsUnreadable,omitempty"`

	// denied are the errors of the configs in Unreadable.
	denied []error
}

// Config is one consumed ConfigMap or Secret, as the live objects are.
type Config struct {
	output.Consumed
	// Found is false when the object does not exist (or is unreadable).
	Found bool `json:"found"`
	// Unreadable is true when the user's credentials may not read it.
	Unreadable bool `json:"unreadable,omitempty"`
}

// Rollout is the progress of a workload's rollout.
type Rollout struct {
	// Done is true when the workload's controller has observed the latest
	// generation and every replica is updated and available.
	Done               bool  `json:"done"`
	Generation         int64 `json:"generation"`
	ObservedGeneration int64 `json:"observedGeneration"`
	Replicas           int32 `json:"replicas"`
	Updated            int32 `json:"updated"`
	Available          int32 `json:"available"`
	// Pods counts the workload's pods; StalePods those whose template is
	// not the current one (older config); PendingPods those no node runs.
	Pods        int `json:"pods"`
	StalePods   int `json:"stalePods"`
	PendingPods int `json:"pendingPods"`
	// PodsUnreadable is true when the user may not list the pods (or
	// ReplicaSets): the counts are then zero, not known.
	PodsUnreadable bool `json:"podsUnreadable,omitempty"`
	// Paused is true for a paused Deployment: its template changes wait
	// for kubectl rollout resume.
	Paused bool `json:"paused,omitempty"`
	// OnDelete is true for a StatefulSet or DaemonSet whose update
	// strategy is OnDelete: its pods take a new template only when deleted.
	OnDelete bool `json:"onDelete,omitempty"`
	// Message says what is happening in words.
	Message string `json:"message"`
}

// Event is a Kubernetes Event, reduced.
type Event struct {
	Time    time.Time `json:"time"`
	Message string    `json:"message"`
}

// Collect reads the managed workloads of the namespace (or all) and their
// state. When a consumed config cannot be read because the API server
// forbids it, its workloads are reported with their config unknown and
// Collect returns the whole report with an error wrapping ErrUnreadable
// that names what could not be read; any other error ends the collection.
func Collect(ctx context.Context, cs kubernetes.Interface, opts Options) (Report, error) {
	ns := opts.Namespace
	if opts.AllNamespaces {
		ns = ""
	}
	c := collector{cs: cs, prefix: opts.Prefix, key: opts.Key}
	if len(opts.Key) > 0 {
		c.keyID = hashing.KeyID(opts.Key)
	}
	out := Report{Workloads: []Workload{}, where: "in namespace " + ns}
	if ns == "" {
		out.where = "in any namespace"
	}
	var listDenied []error
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err = addListed(c, &listDenied, "Deployments", deps.Items, err, func(d *appsv1.Deployment) error {
		return c.add(ctx, &out, "Deployment", d.ObjectMeta, &d.Spec.Template, func() (Rollout, error) { return c.deploymentRollout(ctx, d) })
	}); err != nil {
		return out, err
	}
	sets, err := cs.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err = addListed(c, &listDenied, "StatefulSets", sets.Items, err, func(s *appsv1.StatefulSet) error {
		return c.add(ctx, &out, "StatefulSet", s.ObjectMeta, &s.Spec.Template, func() (Rollout, error) { return c.statefulSetRollout(ctx, s) })
	}); err != nil {
		return out, err
	}
	daemons, err := cs.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	if err = addListed(c, &listDenied, "DaemonSets", daemons.Items, err, func(d *appsv1.DaemonSet) error {
		return c.add(ctx, &out, "DaemonSet", d.ObjectMeta, &d.Spec.Template, func() (Rollout, error) { return daemonSetRollout(d), nil })
	}); err != nil {
		return out, err
	}
	jobs, err := cs.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{})
	if err = addListed(c, &listDenied, "CronJobs", jobs.Items, err, func(j *batchv1.CronJob) error {
		cronRollout := func() (Rollout, error) {
			r := Rollout{Done: true, Generation: j.Generation, ObservedGeneration: j.Generation,
				Message: "the next Job runs the current template"}
			if j.Spec.Suspend != nil && *j.Spec.Suspend {
				r.Message = "suspended: no Job runs until it is resumed"
			}
			return r, nil
		}
		return c.add(ctx, &out, "CronJob", j.ObjectMeta, &j.Spec.JobTemplate.Spec.Template, cronRollout)
	}); err != nil {
		return out, err
	}
	kinds := 4
	rollouts, served, err := listArgoRollouts(ctx, cs, ns)
	if served {
		kinds++
	}
	if err = addListed(c, &listDenied, "Rollouts.argoproj.io", rollouts, err, func(r *argoRollout) error {
		return c.add(ctx, &out, controller.RolloutGVK.Kind, r.ObjectMeta, &r.Spec.Template, func() (Rollout, error) { return r.progress(), nil })
	}); err != nil {
		return out, err
	}
	slices.SortStableFunc(out.Workloads, func(a, b Workload) int { return a.Compare(b.Ref) })
	if len(listDenied) == kinds {
		return out, errors.Join(listDenied...)
	}
	denied := listDenied
	for _, w := range out.Workloads {
		denied = append(denied, w.denied...)
	}
	var errs []error
	if len(denied) > 0 {
		errs = append(errs, fmt.Errorf("%w (what depends on it is reported as unknown): %w", ErrUnreadable, errors.Join(denied...)))
	}
	if err := c.keyMismatches(out.Workloads); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// keyMismatches returns an error wrapping ErrKeyMismatch that names the
// workloads whose render-time hash status cannot check, by cause, and what
// to pass; nil when there are none.
func (c collector) keyMismatches(ws []Workload) error {
	var causes []string
	byCause := map[string][]string{}
	for _, w := range ws {
		if w.KeyMismatch == "" {
			continue
		}
		cause := string(w.KeyMismatch)
		switch w.KeyMismatch {
		case hashing.MismatchKeyed:
			cause = "made with an HMAC key status was not given: pass the controller's key with --hmac-key-file (or $" + hmackey.EnvFile + ")"
		case hashing.MismatchUnkeyed:
			cause = "made without an HMAC key, and status was given one: is the controller keyed?"
		case hashing.MismatchOtherKey:
			cause = "made with another HMAC key (key-id " + w.RenderKeyID + ", not " + c.keyID + "): pass the controller's key with --hmac-key-file"
		case hashing.MismatchUnknown:
			cause = "not a hash value this version of status knows: is confighash newer than kubectl-confighash?"
		}
		if _, ok := byCause[cause]; !ok {
			causes = append(causes, cause)
		}
		byCause[cause] = append(byCause[cause], w.ID())
	}
	if len(causes) == 0 {
		return nil
	}
	lines := make([]string, 0, len(causes))
	for _, cause := range causes {
		names := byCause[cause]
		lines = append(lines, fmt.Sprintf("%d render-time %s %s: %s", len(names), output.Plural(len(names), "hash", "hashes"), cause, strings.Join(names, ", ")))
	}
	return fmt.Errorf("%w (their config is reported as unknown):\n%s", ErrKeyMismatch, strings.Join(lines, "\n"))
}

// addListed adds each of items, the workloads of one kind (what names it in
// errors) as listed, with add. err is the listing's error: one the API
// server forbade is recorded in denied, as listed does; any other is
// returned.
func addListed[T any](c collector, denied *[]error, what string, items []T, err error, add func(*T) error) error {
	if err := c.listed(denied, what, err); err != nil {
		return err
	}
	for i := range items {
		if err := add(&items[i]); err != nil {
			return err
		}
	}
	return nil
}

// listed returns the error of listing a kind of workload, or records it
// in denied and returns nil when the API server forbade it: the kinds the
// user may list are still reported.
func (collector) listed(denied *[]error, kind string, err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		*denied = append(*denied, fmt.Errorf("listing %s: %w", kind, err))
		return nil
	}
	return fmt.Errorf("listing %s: %w", kind, err)
}

type collector struct {
	cs     kubernetes.Interface
	prefix string
	key    []byte
	keyID  string
}

// add appends the workload to out when it is managed, with its rollout
// (read only then).
func (c collector) add(ctx context.Context, out *Report, kind string, meta metav1.ObjectMeta, tmpl *corev1.PodTemplateSpec, rollout func() (Rollout, error)) error {
	w, ok, err := c.workload(ctx, kind, meta, tmpl)
	if err != nil || !ok {
		return err
	}
	w.Rollout, err = rollout()
	switch {
	case apierrors.IsForbidden(err):
		w.denied = append(w.denied, fmt.Errorf("%s: %w", w.ID(), err))
	case err != nil:
		return err
	}
	out.Workloads = append(out.Workloads, w)
	return nil
}

// workload computes the config state of a workload as the controller
// would: the same view, the same live hashes, controller.Decide.
func (c collector) workload(ctx context.Context, kind string, meta metav1.ObjectMeta, tmpl *corev1.PodTemplateSpec) (Workload, bool, error) {
	v := controller.Inspect(meta.Namespace, meta.Annotations, tmpl, c.prefix, c.keyID)
	if !v.Managed {
		return Workload{}, false, nil
	}
	w := Workload{Ref: output.Ref{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}, RenderHash: v.RawRenderHash, ControllerHash: v.ControllerHash, Configs: []Config{}}
	external := v.External
	if v.Mismatch != "" {
		// Inspect takes every config for external, as the controller
		// does; the render's own list says which are.
		w.KeyMismatch, w.RenderKeyID = v.Mismatch, v.OtherKeyID
		external = annotations.ParseExternal(meta.Annotations[annotations.Key(c.prefix, annotations.External)])
	}
	in := controller.Input{
		RenderHash: v.RenderHash, RawRenderHash: v.RawRenderHash,
		ControllerHash: v.ControllerHash, ControllerBase: v.ControllerBase,
		KeyID: c.keyID, ControllerKeyID: v.ControllerKeyID,
		Uses: v.UsesPrint, ControllerUses: v.ControllerUses,
		RenderBaseline: v.RenderBaseline,
	}
	in.Baseline, in.BaselineKeyID, in.BaselineUses = controller.ParseBaseline(v.Baseline)
	contents := map[string]hashing.Content{}
	created := map[string]time.Time{}
	for _, u := range v.Uses {
		cfg := Config{Consumed: output.ConsumedOf(u, external[u.Ref()])}
		content, found, pending, at, err := c.content(ctx, meta.Namespace, u.Kind, u.Name)
		switch {
		case apierrors.IsForbidden(err):
			cfg.Unreadable = true
			w.Configs = append(w.Configs, cfg)
			w.Unreadable = append(w.Unreadable, u.Ref())
			w.denied = append(w.denied, fmt.Errorf("%s: %w", w.ID(), err))
			continue
		case err != nil:
			return w, false, fmt.Errorf("%s: %w", w.ID(), err)
		}
		cfg.Found = found
		if found {
			contents[u.Ref()], created[u.Ref()] = content, at
		}
		in.Missing = append(in.Missing, v.Missing(u, content, found, pending)...)
		w.Configs = append(w.Configs, cfg)
	}
	lookup := func(kind hashing.Kind, name string) (hashing.Content, bool) {
		content, ok := contents[string(kind)+"/"+name]
		return content, ok
	}
	hopts := hashing.Options{Key: c.key}
	var inStream []hashing.Use
	in.LiveExternal = map[string]string{}
	for _, u := range v.Uses {
		if v.External[u.Ref()] {
			in.LiveExternal[u.Ref()] = hashing.Compute(meta.Namespace, []hashing.Use{u}, lookup, hopts)
		} else {
			inStream = append(inStream, u)
		}
	}
	in.LiveIn = hashing.Compute(meta.Namespace, inStream, lookup, hopts)
	if in.RenderHash != "" && in.LiveIn != in.RenderHash {
		in.LiveInUnnamespaced = hashing.Compute("", inStream, lookup, hopts)
	}
	in.LiveAll = hashing.Compute(meta.Namespace, v.Uses, lookup, hopts)
	in.Landed = controller.Landed(meta.Namespace, v, meta.CreationTimestamp.Time, created, c.key)
	d := controller.Decide(in)
	w.Reason, w.Changed, w.Missing = string(d.Reason), d.Changed, d.Missing
	switch {
	case len(w.Unreadable) > 0:
		// A hash of what could be read would be a wrong answer.
		w.Config, w.Reason, w.Changed, w.Missing = ConfigUnknown, "", nil, nil
	case d.Action == controller.ActionRoll:
		w.LiveHash = in.LiveAll
		w.Config = ConfigStale
	case d.Action == controller.ActionBlocked:
		w.LiveHash = in.LiveAll
		w.Config = ConfigBlocked
	case w.KeyMismatch != "":
		// What a controller in another mode would decide is not whether
		// the pods run the config the render hashed.
		w.Config, w.Reason, w.Changed = ConfigUnknown, "", nil
	default:
		w.LiveHash = in.LiveAll
		w.Config = ConfigCurrent
	}
	ev, err := c.lastEvent(ctx, kind, meta)
	switch {
	case apierrors.IsForbidden(err):
		w.EventsUnreadable = true
		w.denied = append(w.denied, fmt.Errorf("%s: %w", w.ID(), err))
	case err != nil:
		return w, false, fmt.Errorf("%s: %w", w.ID(), err)
	}
	w.LastConfigChanged = ev
	return w, true, nil
}

// content reads one config's content and creation time; found is false
// when it does not exist; pending is the key the cluster has yet to write into a config it
// fills in (controller.FillPending: blocked, as the controller holds it).
func (c collector) content(ctx context.Context, ns string, kind hashing.Kind, name string) (content hashing.Content, found bool, pending string, created time.Time, err error) {
	if kind == hashing.KindSecret {
		var s *corev1.Secret
		if s, err = c.cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			content, err = controller.ContentOf(s)
			pending, created = controller.FillPending(s), s.CreationTimestamp.Time
		}
	} else {
		var cm *corev1.ConfigMap
		if cm, err = c.cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			content, err = controller.ContentOf(cm)
			pending, created = controller.FillPending(cm), cm.CreationTimestamp.Time
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return content, false, "", time.Time{}, nil
	case err != nil:
		return content, false, "", time.Time{}, fmt.Errorf("reading %s %s: %w", kind, hashing.ObjectName(ns, name), err)
	}
	return content, true, pending, created, nil
}

// lastEvent returns the newest ConfigChanged Event about the workload.
func (c collector) lastEvent(ctx context.Context, kind string, meta metav1.ObjectMeta) (*Event, error) {
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": meta.Name, "reason": controller.EventReasonConfigChanged}.AsSelector()
	list, err := c.cs.CoreV1().Events(meta.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("listing Events: %w", err)
	}
	var last *Event
	for i := range list.Items {
		e := &list.Items[i]
		if e.InvolvedObject.UID != "" && e.InvolvedObject.UID != meta.UID {
			continue // an Event about an earlier object of that name
		}
		t := eventTime(e)
		if last == nil || t.After(last.Time) {
			last = &Event{Time: t, Message: e.Message}
		}
	}
	return last, nil
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// deploymentRollout reads a Deployment's progress and counts its pods by
// ReplicaSet: those not of the current ReplicaSet run an older template.
func (c collector) deploymentRollout(ctx context.Context, d *appsv1.Deployment) (Rollout, error) {
	r := Rollout{Generation: d.Generation, ObservedGeneration: d.Status.ObservedGeneration,
		Replicas: replicas(d.Spec.Replicas), Updated: d.Status.UpdatedReplicas, Available: d.Status.AvailableReplicas, Paused: d.Spec.Paused}
	// done: the controller has observed the latest generation and every
	// replica is updated and available.
	done := d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == r.Replicas &&
		d.Status.Replicas == r.Replicas && d.Status.AvailableReplicas == r.Replicas
	opts, err := selectorOf("Deployment", d.ObjectMeta, d.Spec.Selector)
	if err != nil {
		return r, err
	}
	sets, err := c.cs.AppsV1().ReplicaSets(d.Namespace).List(ctx, opts)
	if err != nil {
		return r.podsUnreadable(done), fmt.Errorf("listing ReplicaSets: %w", err)
	}
	current := ""
	owned := map[string]bool{}
	for i := range sets.Items {
		rs := &sets.Items[i]
		if !ownedBy(rs.OwnerReferences, d.UID) {
			continue
		}
		owned[rs.Name] = true
		// The ReplicaSet of the Deployment's template, as the Deployment
		// controller finds it; none while the Deployment is paused or its
		// controller has yet to make it, and then every pod runs an older
		// template. (Its revision annotation is the Deployment's last
		// ReplicaSet's, which is not the template's while paused.)
		if sameTemplate(&rs.Spec.Template, &d.Spec.Template) {
			current = rs.Name
		}
	}
	return c.countPods(ctx, r, done, d.Namespace, opts, func(p *corev1.Pod) (bool, bool) {
		owner := ownerName(p.OwnerReferences, "ReplicaSet")
		return owned[owner], owner != current
	})
}

// sameTemplate reports whether a ReplicaSet's pod template is a
// Deployment's: equal but for the pod-template-hash label the Deployment
// controller adds, as that controller compares them.
func sameTemplate(rs, d *corev1.PodTemplateSpec) bool {
	a, b := rs.DeepCopy(), d.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return apiequality.Semantic.DeepEqual(a, b)
}

// statefulSetRollout reads a StatefulSet's progress; a pod whose revision
// label is not the update revision runs an older template.
func (c collector) statefulSetRollout(ctx context.Context, s *appsv1.StatefulSet) (Rollout, error) {
	r := Rollout{Generation: s.Generation, ObservedGeneration: s.Status.ObservedGeneration,
		Replicas: replicas(s.Spec.Replicas), Updated: s.Status.UpdatedReplicas, Available: s.Status.AvailableReplicas,
		OnDelete: s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType}
	done := s.Status.ObservedGeneration >= s.Generation && s.Status.UpdatedReplicas == r.Replicas &&
		s.Status.AvailableReplicas == r.Replicas
	opts, err := selectorOf("StatefulSet", s.ObjectMeta, s.Spec.Selector)
	if err != nil {
		return r, err
	}
	return c.countPods(ctx, r, done, s.Namespace, opts, func(p *corev1.Pod) (bool, bool) {
		return ownedBy(p.OwnerReferences, s.UID),
			s.Status.UpdateRevision != "" && p.Labels[appsv1.ControllerRevisionHashLabelKey] != s.Status.UpdateRevision
	})
}

// selectorOf is a workload's label selector as list options.
func selectorOf(kind string, meta metav1.ObjectMeta, selector *metav1.LabelSelector) (metav1.ListOptions, error) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return metav1.ListOptions{}, fmt.Errorf("selector of %s: %w", output.WorkloadID(kind, meta.Namespace, meta.Name), err)
	}
	return metav1.ListOptions{LabelSelector: sel.String()}, nil
}

// countPods counts the pods opts selects in namespace ns that belong to the
// workload, as classify says (mine), and which of them run an older
// template (stale), then finishes r.
func (c collector) countPods(ctx context.Context, r Rollout, done bool, ns string, opts metav1.ListOptions, classify func(*corev1.Pod) (mine, stale bool)) (Rollout, error) {
	pods, err := c.cs.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		return r.podsUnreadable(done), fmt.Errorf("listing Pods: %w", err)
	}
	for i := range pods.Items {
		if mine, stale := classify(&pods.Items[i]); mine {
			r.countPod(&pods.Items[i], stale)
		}
	}
	r.finish(done)
	return r, nil
}

// daemonSetRollout reads a DaemonSet's progress from its status: its pods
// are counted by the DaemonSet controller per node.
func daemonSetRollout(d *appsv1.DaemonSet) Rollout {
	st := d.Status
	r := Rollout{Generation: d.Generation, ObservedGeneration: st.ObservedGeneration, Replicas: st.DesiredNumberScheduled,
		Updated: st.UpdatedNumberScheduled, Available: st.NumberAvailable, Pods: int(st.CurrentNumberScheduled),
		OnDelete: d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType}
	r.StalePods = max(0, int(st.CurrentNumberScheduled-st.UpdatedNumberScheduled))
	r.finish(st.ObservedGeneration >= d.Generation && st.UpdatedNumberScheduled == st.DesiredNumberScheduled && st.NumberAvailable == st.DesiredNumberScheduled)
	return r
}

// podsUnreadable finishes a rollout whose pods could not be listed: its
// progress is the workload's status alone.
func (r Rollout) podsUnreadable(done bool) Rollout {
	r.PodsUnreadable = true
	r.finish(done)
	return r
}

func (r *Rollout) countPod(p *corev1.Pod, stale bool) {
	if p.DeletionTimestamp != nil {
		return
	}
	r.Pods++
	if stale {
		r.StalePods++
	}
	if p.Status.Phase == corev1.PodPending || p.Status.Phase == "" {
		r.PendingPods++
	}
}

// finish sets Done and the message.
func (r *Rollout) finish(done bool) {
	r.Done = done
	switch {
	case r.ObservedGeneration < r.Generation:
		r.Message = "waiting for the workload's controller to see generation " + strconv.FormatInt(r.Generation, 10)
	case done:
		r.Message = "complete"
	default:
		r.Message = fmt.Sprintf("in progress: %d of %d updated, %d available", r.Updated, r.Replicas, r.Available)
	}
	if r.StalePods > 0 {
		r.Message += fmt.Sprintf("; %d %s an older template", r.StalePods, output.Plural(r.StalePods, "pod runs", "pods run"))
	}
	if r.PodsUnreadable {
		r.Message += "; pods not counted (not allowed to list them)"
	}
	if r.PendingPods > 0 {
		r.Message += fmt.Sprintf("; %d %s Pending (not scheduled or not started: no node has run %s)", r.PendingPods,
			output.Plural(r.PendingPods, "pod is", "pods are"), output.Plural(r.PendingPods, "it", "them"))
	}
	switch {
	case r.Paused && !done:
		r.Message = "paused (kubectl rollout resume to roll): " + r.Message
	case r.OnDelete && !done:
		r.Message = "OnDelete (its pods take the new template when deleted): " + r.Message
	}
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid && r.Controller != nil && *r.Controller {
			return true
		}
	}
	return false
}

func ownerName(refs []metav1.OwnerReference, kind string) string {
	for _, r := range refs {
		if r.Kind == kind && r.Controller != nil && *r.Controller {
			return r.Name
		}
	}
	return ""
}
