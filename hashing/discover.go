package hashing

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Use is what a pod spec consumes from one ConfigMap or Secret. References
// always name an object in the pod's own namespace.
type Use struct {
	Kind Kind
	Name string
	// All is true when the whole object is consumed: envFrom, a volume or
	// projected source without items, an image pull secret.
	All bool
	// Keys are the consumed keys in byte order; empty when All is true.
	Keys []string
	// Optional is true when every reference to the object is optional, so a
	// missing object does not stop the pod from starting.
	Optional bool
}

// Ref names the object a Use refers to, as Kind/name.
func (u Use) Ref() string { return string(u.Kind) + "/" + u.Name }

// Discover lists what a pod spec consumes, one Use per object, sorted by kind
// then name. It reads volumes, projected sources, image pull secrets and the
// env and envFrom of init, regular and ephemeral containers.
func Discover(spec *corev1.PodSpec) []Use {
	if spec == nil {
		return nil
	}
	d := &discovery{}
	d.read(spec)
	return d.result()
}

// DiscoverRequired is Discover, and in the same walk of spec the keys a pod
// cannot start without, by Kind/name (sorted, without repeats): those an
// env valueFrom or the items of a volume or projected source name without
// optional: true. The kubelet refuses to start a container whose required
// key is absent and to mount such a volume. The map is nil when no key is
// required.
func DiscoverRequired(spec *corev1.PodSpec) ([]Use, map[string][]string) {
	d := &discovery{trackRequired: true}
	if spec != nil {
		d.read(spec)
	}
	for ref, keys := range d.required {
		slices.Sort(keys)
		d.required[ref] = slices.Compact(keys)
	}
	return d.result(), d.required
}

// read collects the references of spec.
func (d *discovery) read(spec *corev1.PodSpec) {
	d.volumes(spec.Volumes)
	for _, s := range spec.ImagePullSecrets {
		d.whole(KindSecret, s.Name, true)
	}
	for i := range spec.InitContainers {
		d.container(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.Containers {
		d.container(spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i].EphemeralContainerCommon
		d.container(c.Env, c.EnvFrom)
	}
}

// discovery collects uses in the order found; pod specs reference few
// objects, so a slice beats a map. With trackRequired, required collects
// the keys referenced without optional: true, by Kind/name.
type discovery struct {
	uses []Use
	// trackRequired asks for required, made on the first required key.
	trackRequired bool
	required      map[string][]string
}

func (d *discovery) entry(kind Kind, name string, optional bool) *Use {
	for i := range d.uses {
		if u := &d.uses[i]; u.Kind == kind && u.Name == name {
			u.Optional = u.Optional && optional
			return u
		}
	}
	d.uses = append(d.uses, Use{Kind: kind, Name: name, Optional: optional})
	return &d.uses[len(d.uses)-1]
}

func (d *discovery) whole(kind Kind, name string, optional bool) {
	if name == "" {
		return
	}
	d.entry(kind, name, optional).All = true
}

func (d *discovery) key(kind Kind, name, key string, optional bool) {
	if name == "" {
		return
	}
	u := d.entry(kind, name, optional)
	u.Keys = append(u.Keys, key)
	if d.trackRequired && !optional && key != "" {
		if d.required == nil {
			d.required = map[string][]string{}
		}
		ref := u.Ref()
		d.required[ref] = append(d.required[ref], key)
	}
}

func (d *discovery) items(kind Kind, name string, items []corev1.KeyToPath, optional bool) {
	if len(items) == 0 {
		d.whole(kind, name, optional)
		return
	}
	for _, it := range items {
		d.key(kind, name, it.Key, optional)
	}
}

func (d *discovery) volumes(volumes []corev1.Volume) {
	for i := range volumes {
		v := &volumes[i].VolumeSource
		if cm := v.ConfigMap; cm != nil {
			d.items(KindConfigMap, cm.Name, cm.Items, isTrue(cm.Optional))
		}
		if s := v.Secret; s != nil {
			d.items(KindSecret, s.SecretName, s.Items, isTrue(s.Optional))
		}
		if p := v.Projected; p != nil {
			d.projected(p.Sources)
		}
	}
}

func (d *discovery) projected(sources []corev1.VolumeProjection) {
	for i := range sources {
		if cm := sources[i].ConfigMap; cm != nil {
			d.items(KindConfigMap, cm.Name, cm.Items, isTrue(cm.Optional))
		}
		if s := sources[i].Secret; s != nil {
			d.items(KindSecret, s.Name, s.Items, isTrue(s.Optional))
		}
	}
}

func (d *discovery) container(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
	for i := range envFrom {
		if r := envFrom[i].ConfigMapRef; r != nil {
			d.whole(KindConfigMap, r.Name, isTrue(r.Optional))
		}
		if r := envFrom[i].SecretRef; r != nil {
			d.whole(KindSecret, r.Name, isTrue(r.Optional))
		}
	}
	for i := range env {
		from := env[i].ValueFrom
		if from == nil {
			continue
		}
		if r := from.ConfigMapKeyRef; r != nil {
			d.key(KindConfigMap, r.Name, r.Key, isTrue(r.Optional))
		}
		if r := from.SecretKeyRef; r != nil {
			d.key(KindSecret, r.Name, r.Key, isTrue(r.Optional))
		}
	}
}

// result finishes the uses: a whole use lists no keys; keys are sorted and
// without repeats; uses are sorted by kind, then name.
func (d *discovery) result() []Use {
	out := d.uses
	if out == nil {
		out = []Use{}
	}
	for i := range out {
		if out[i].All {
			out[i].Keys = nil
			continue
		}
		sort.Strings(out[i].Keys)
		out[i].Keys = slices.Compact(out[i].Keys)
	}
	SortUses(out)
	return out
}

// SortUses orders uses by kind, then name.
func SortUses(uses []Use) {
	sort.Slice(uses, func(i, j int) bool {
		if uses[i].Kind != uses[j].Kind {
			return uses[i].Kind < uses[j].Kind
		}
		return uses[i].Name < uses[j].Name
	})
}

func isTrue(b *bool) bool { return b != nil && *b }
