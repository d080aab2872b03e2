package controller

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/confighash/confighash/hashing"
)

// requiredKeys lists, by Kind/name, the keys a pod cannot start without:
// those an env valueFrom or the items of a volume or projected source name
// without optional: true. The kubelet refuses to start a container whose
// required key is absent (CreateContainerConfigError) and to mount such a
// volume, so a roll while one is absent only makes pods that cannot run.
func requiredKeys(spec *corev1.PodSpec) map[string][]string {
	out := map[string][]string{}
	add := func(kind hashing.Kind, name, key string, optional *bool) {
		if name == "" || key == "" || (optional != nil && *optional) {
			return
		}
		ref := string(kind) + "/" + name
		if !slices.Contains(out[ref], key) {
			out[ref] = append(out[ref], key)
		}
	}
	items := func(kind hashing.Kind, name string, list []corev1.KeyToPath, optional *bool) {
		for _, it := range list {
			add(kind, name, it.Key, optional)
		}
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i].VolumeSource
		if cm := v.ConfigMap; cm != nil {
			items(hashing.KindConfigMap, cm.Name, cm.Items, cm.Optional)
		}
		if s := v.Secret; s != nil {
			items(hashing.KindSecret, s.SecretName, s.Items, s.Optional)
		}
		if p := v.Projected; p != nil {
			for j := range p.Sources {
				if cm := p.Sources[j].ConfigMap; cm != nil {
					items(hashing.KindConfigMap, cm.Name, cm.Items, cm.Optional)
				}
				if s := p.Sources[j].Secret; s != nil {
					items(hashing.KindSecret, s.Name, s.Items, s.Optional)
				}
			}
		}
	}
	env := func(list []corev1.EnvVar) {
		for i := range list {
			from := list[i].ValueFrom
			if from == nil {
				continue
			}
			if r := from.ConfigMapKeyRef; r != nil {
				add(hashing.KindConfigMap, r.Name, r.Key, r.Optional)
			}
			if r := from.SecretKeyRef; r != nil {
				add(hashing.KindSecret, r.Name, r.Key, r.Optional)
			}
		}
	}
	for i := range spec.InitContainers {
		env(spec.InitContainers[i].Env)
	}
	for i := range spec.Containers {
		env(spec.Containers[i].Env)
	}
	for i := range spec.EphemeralContainers {
		env(spec.EphemeralContainers[i].Env)
	}
	for ref := range out {
		slices.Sort(out[ref])
	}
	return out
}

// missingKeyRef names a required key that its config lacks, as an entry of
// Input.Missing: "Kind/name key k".
func missingKeyRef(ref, key string) string { return ref + " key " + key }

// Missing lists what of use u's config the pods cannot start without: the
// config itself when it is not found and not optional, or the required keys
// (RequiredKeys) its content c lacks. The controller does not roll while
// anything is missing, and kubectl confighash status reports it as blocked.
func (v View) Missing(u hashing.Use, c hashing.Content, found bool) []string {
	if !found {
		if u.Optional {
			return nil
		}
		return []string{u.Ref()}
	}
	var out []string
	for _, key := range v.RequiredKeys[u.Ref()] {
		if _, ok := c.Keys[key]; !ok {
			out = append(out, missingKeyRef(u.Ref(), key))
		}
	}
	return out
}
