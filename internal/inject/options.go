package inject

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/annotations"
)

// DefaultPrefix is the annotation prefix confighash uses unless told otherwise.
const DefaultPrefix = annotations.DefaultPrefix

// Annotation names under the prefix, shared with the controller.
const (
	// HashName, on a pod template, holds the render-time hash.
	HashName = annotations.Hash
	// KeyIDName, on a pod template next to a keyed hash, names the key.
	KeyIDName = annotations.KeyID
	// ExternalName, on a workload, lists what it consumes from outside the
	// stream, as Kind/name separated by commas, for the controller to watch.
	ExternalName = annotations.External
	// EnabledName, on a workload, set to "false" opts it out; set to "true"
	// it opts in to the controller.
	EnabledName = annotations.Enabled
)

// Options configure the filter. The zero value uses the defaults.
type Options struct {
	// Prefix of the annotations; DefaultPrefix when empty.
	Prefix string
	// Key switches the hash to HMAC-SHA256 under this key.
	Key []byte
	// DefaultNamespace is the namespace of objects that name none (Helm's
	// release namespace, kubectl's -n); empty leaves them in "".
	DefaultNamespace string
	// Workloads adds pod template locations for other kinds.
	Workloads []WorkloadKind
	// SkipLocalConfig leaves out objects annotated
	// config.kubernetes.io/local-config with any value but "false", as
	// kustomize drops them from its output and kpt does not apply them:
	// they are neither configs (a reference to one's name is external) nor
	// workloads. The KRM function sets it; a Helm or kubectl stream applies
	// such objects, and leaves it off.
	SkipLocalConfig bool
}

// Validate checks the options a user can set.
func (o Options) Validate() error {
	if o.Prefix != "" {
		if err := annotations.CheckPrefix(o.Prefix); err != nil {
			return fmt.Errorf("prefix %w", err)
		}
	}
	// The hash covers the namespace: one no object can have (a typo, a
	// stray space in --post-renderer-args) would hash for nothing.
	if o.DefaultNamespace != "" {
		if errs := validation.IsDNS1123Label(o.DefaultNamespace); len(errs) > 0 {
			return fmt.Errorf("namespace %q is not a namespace name: %s", o.DefaultNamespace, strings.Join(errs, "; "))
		}
	}
	for i, w := range o.Workloads {
		if err := w.validate(); err != nil {
			return fmt.Errorf("workloads[%d]: %w", i, err)
		}
	}
	return nil
}

// Annotation returns the full annotation key for name under the prefix.
func (o Options) Annotation(name string) string { return annotations.Key(o.Prefix, name) }

// templatePath returns the pod template path for a group and kind, user
// configuration first.
// nearMiss is a warning for an object that no workload kind matches but
// one of the configured kinds would with another API group: a kind given
// without its group (Runner=spec/template) names the core group and
// matches no custom resource, which would otherwise go unhashed unsaid.
func (o Options) nearMiss(obj Object) (Finding, bool) {
	for _, w := range o.Workloads {
		if w.Kind == obj.Kind && w.Group != obj.group() {
			return Finding{Object: obj, Severity: SeverityWarning, Message: fmt.Sprintf(
				"not hashed: the workload kind %s is configured in the API group %q and this object is in %q; give the kind its group to hash it (--workload %s=%s)",
				obj.Kind, w.Group, obj.group(), WorkloadKind{Group: obj.group(), Kind: obj.Kind}.name(), w.Path)}, true
		}
	}
	return Finding{}, false
}

func (o Options) templatePath(group, kind string) ([]string, bool) {
	for _, list := range [][]WorkloadKind{o.Workloads, builtinWorkloads} {
		for _, w := range list {
			if w.Group == group && w.Kind == kind {
				return w.fields(), true
			}
		}
	}
	return nil, false
}

// localConfig is kustomize's and kpt's annotation for an object that is
// input to client-side tools only and never applied.
const localConfig = "config.kubernetes.io/local-config"

// LeavesOut reports whether the object is one the options leave out: a
// local-config object under SkipLocalConfig.
func (o Options) LeavesOut(node *yaml.RNode) bool {
	return o.SkipLocalConfig && node != nil && IsLocalConfig(node)
}

// IsLocalConfig reports whether the object is marked local-config, read as
// kustomize reads the annotation (present and not "false").
func IsLocalConfig(node *yaml.RNode) bool {
	v, ok := Annotation(node.YNode(), localConfig)
	return ok && v != "false"
}
