package inject

import (
	"fmt"
	"strings"
)

// WorkloadKind tells the filter where the pod template of a kind lives.
type WorkloadKind struct {
	// Group is the API group ("" for core); Kind the resource kind.
	Group string `json:"group" yaml:"group"`
	Kind  string `json:"kind" yaml:"kind"`
	// Path is the slash-separated field path to the pod template, like
	// spec/template or spec/jobTemplate/spec/template.
	Path string `json:"path" yaml:"path"`
}

func (w WorkloadKind) validate() error {
	switch {
	case w.Kind == "":
		return fmt.Errorf("kind is required")
	case w.Path == "":
		return fmt.Errorf("path is required for kind %s", w.Kind)
	case strings.Contains(w.Path, "//") || strings.HasPrefix(w.Path, "/") || strings.HasSuffix(w.Path, "/"):
		return fmt.Errorf("path %q for kind %s: use field names separated by single slashes", w.Path, w.Kind)
	}
	return nil
}

func (w WorkloadKind) fields() []string { return strings.Split(w.Path, "/") }

// name is the kind as ParseWorkload reads it: Kind.group, or Kind for the
// core group.
func (w WorkloadKind) name() string {
	if w.Group == "" {
		return w.Kind
	}
	return w.Kind + "." + w.Group
}

// builtinWorkloads are the kinds confighash knows without configuration.
var builtinWorkloads = []WorkloadKind{
	{Group: "apps", Kind: "Deployment", Path: "spec/template"},
	{Group: "apps", Kind: "StatefulSet", Path: "spec/template"},
	{Group: "apps", Kind: "DaemonSet", Path: "spec/template"},
	{Group: "apps", Kind: "ReplicaSet", Path: "spec/template"},
	{Group: "extensions", Kind: "Deployment", Path: "spec/template"},
	{Group: "extensions", Kind: "DaemonSet", Path: "spec/template"},
	{Group: "batch", Kind: "Job", Path: "spec/template"},
	{Group: "batch", Kind: "CronJob", Path: "spec/jobTemplate/spec/template"},
	{Group: "argoproj.io", Kind: "Rollout", Path: "spec/template"},
	{Group: "apps.openshift.io", Kind: "DeploymentConfig", Path: "spec/template"},
	{Group: "", Kind: "ReplicationController", Path: "spec/template"},
}

// immutableTemplate reports whether the API server refuses any change of a
// kind's pod template once an object exists: a Job's. A hash there would make
// every apply after a config change fail (helm upgrade, kubectl apply, Argo
// CD and Flux syncs), where without confighash it succeeds.
func immutableTemplate(group, kind string) bool { return group == "batch" && kind == "Job" }

// ParseWorkload reads the short form Kind.group=path of a WorkloadKind, for
// example CloneSet.apps.kruise.io=spec/template (core kinds: Kind=path), as
// the --workload flag and the KRM function's data.workloads write it.
func ParseWorkload(s string) (WorkloadKind, error) {
	kindGroup, path, ok := strings.Cut(s, "=")
	if !ok {
		return WorkloadKind{}, fmt.Errorf("%q: want Kind.group=path, like CloneSet.apps.kruise.io=spec/template", s)
	}
	kind, group, _ := strings.Cut(kindGroup, ".")
	w := WorkloadKind{Group: group, Kind: kind, Path: path}
	if err := w.validate(); err != nil {
		return WorkloadKind{}, fmt.Errorf("%q: %w", s, err)
	}
	return w, nil
}
