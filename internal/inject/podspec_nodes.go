package inject

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/yaml11"
	"github.com/confighash/confighash/internal/yamlnode"
)

// specReader reads the fields of a pod spec that reference ConfigMaps and
// Secrets straight from the YAML nodes into the API types, with the API
// server's rules for those fields: case-sensitive names, strings for names
// and keys, booleans for optional, the last of repeated keys. Other fields
// are not read. FuzzPodSpecReader holds it to a JSON decode of the same
// nodes.
type specReader struct {
	err error
	// path[:depth] leads from the pod spec to the node being read, for
	// errors (containers[1].envFrom[0].configMapRef.name). An array, not
	// a slice into one, keeps the reader off the heap; a pod spec's
	// references lie at most 8 steps deep.
	path  [10]pathStep
	depth int
}

// pathStep is a mapping key, or an index into a sequence (key "").
type pathStep struct {
	key   string
	index int
}

func readPodSpec(n *yaml.Node) (*corev1.PodSpec, error) {
	r := &specReader{}
	spec := &corev1.PodSpec{}
	r.fields(n, func(k string, v *yaml.Node) {
		switch k {
		case "volumes":
			r.list(v, func(item *yaml.Node) { spec.Volumes = append(spec.Volumes, r.volume(item)) })
		case "imagePullSecrets":
			r.list(v, func(item *yaml.Node) {
				spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: r.stringField(item, "name")})
			})
		case "initContainers":
			r.list(v, func(item *yaml.Node) { spec.InitContainers = append(spec.InitContainers, r.container(item)) })
		case "containers":
			r.list(v, func(item *yaml.Node) { spec.Containers = append(spec.Containers, r.container(item)) })
		case "ephemeralContainers":
			r.list(v, func(item *yaml.Node) {
				c := r.container(item)
				spec.EphemeralContainers = append(spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom}})
			})
		}
	})
	return spec, r.err
}

// fail records the first error: the path to n, the field being read, and
// problem, at n's line.
func (r *specReader) fail(problem string, n *yaml.Node) {
	if r.err == nil {
		r.err = yamlnode.AtNodeLine(n.Line, r.where()+": "+problem)
	}
}

// push adds a step to the path; one past its capacity is counted, not
// recorded.
func (r *specReader) push(s pathStep) {
	if r.depth < len(r.path) {
		r.path[r.depth] = s
	}
	r.depth++
}

// where spells the path to the node being read, as kubectl names fields.
func (r *specReader) where() string {
	var b strings.Builder
	for i, s := range r.path[:min(r.depth, len(r.path))] {
		switch {
		case s.key == "":
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case i > 0:
			b.WriteString("." + s.key)
		default:
			b.WriteString(s.key)
		}
	}
	return b.String()
}

// open resolves n for reading as a node of kind (what names the kind in
// the error): false when there is nothing to read, as for null (an empty
// one) or after an error, and when n is of another kind, which fails.
func (r *specReader) open(n *yaml.Node, kind yaml.Kind, what string) (*yaml.Node, bool) {
	n = resolve(n)
	if isNull(n) || r.err != nil {
		return nil, false
	}
	if n.Kind != kind {
		r.fail("expected "+what, n)
		return nil, false
	}
	return n, true
}

// fields calls f for each entry of mapping n (null is an empty mapping).
func (r *specReader) fields(n *yaml.Node, f func(k string, v *yaml.Node)) {
	n, ok := r.open(n, yaml.MappingNode, "an object")
	if !ok {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i]).Value
		r.push(pathStep{key: k})
		f(k, n.Content[i+1])
		r.depth--
	}
}

// presentFields is fields for a mapping of optional objects: an entry set to
// null stands for an absent one and is skipped.
func (r *specReader) presentFields(n *yaml.Node, f func(k string, v *yaml.Node)) {
	r.fields(n, func(k string, v *yaml.Node) {
		if !isNull(resolve(v)) {
			f(k, v)
		}
	})
}

// list calls f for each item of sequence n (null is an empty list).
func (r *specReader) list(n *yaml.Node, f func(*yaml.Node)) {
	n, ok := r.open(n, yaml.SequenceNode, "a list")
	if !ok {
		return
	}
	for i, item := range n.Content {
		r.push(pathStep{index: i})
		f(item)
		r.depth--
	}
}

func (r *specReader) stringField(m *yaml.Node, key string) string {
	var out string
	r.fields(m, func(k string, v *yaml.Node) {
		if k == key {
			out = r.str(v)
		}
	})
	return out
}

func (r *specReader) str(n *yaml.Node) string {
	n = resolve(n)
	switch {
	case isNull(n):
		return ""
	case n.Kind != yaml.ScalarNode || n.ShortTag() != yaml.NodeTagString:
		r.fail("expected a string", n)
		return ""
	}
	return n.Value
}

func (r *specReader) boolPtr(n *yaml.Node) *bool {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	// kubectl and Helm read a manifest as YAML 1.1, where a plain yes, on
	// or y is true and no, off or n false. kustomize writes such a word
	// quoted, so it reaches a KRM function as the string the API server
	// refuses.
	if n.Kind == yaml.ScalarNode && yaml11.Scalar(n) == yaml11.Bool {
		if b, ok := yaml11.BoolValue(n.Value); ok {
			return &b
		}
	}
	r.fail("expected true or false", n)
	return nil
}

func (r *specReader) items(n *yaml.Node) []corev1.KeyToPath {
	var out []corev1.KeyToPath
	r.list(n, func(item *yaml.Node) {
		out = append(out, corev1.KeyToPath{Key: r.stringField(item, "key")})
	})
	return out
}

// reference is what a configMap/secret volume, projected source, key
// selector or envFrom source says about the object it references.
type reference struct {
	name     string
	key      string
	items    []corev1.KeyToPath
	optional *bool
}

// Which of key and items a reference has, besides its name and optional.
const (
	withKey = 1 << iota
	withItems
)

// reference reads a reference object: the name under nameKey, optional,
// and key or items where has says the API type has them (other fields are
// not read).
func (r *specReader) reference(n *yaml.Node, nameKey string, has int) reference {
	var ref reference
	r.fields(n, func(k string, v *yaml.Node) {
		switch {
		case k == nameKey:
			ref.name = r.str(v)
		case k == "key" && has&withKey != 0:
			ref.key = r.str(v)
		case k == "items" && has&withItems != 0:
			ref.items = r.items(v)
		case k == "optional":
			ref.optional = r.boolPtr(v)
		}
	})
	return ref
}

// refFields names the two fields of an object in a pod spec that reference
// a ConfigMap and a Secret, and what their reference objects hold.
type refFields struct {
	configMap, secret string // the two field names
	secretName        string // the key that names the Secret in its reference object
	has               int    // withKey, withItems or neither
}

var (
	volumeRefs     = refFields{configMap: "configMap", secret: "secret", secretName: "secretName", has: withItems}
	projectionRefs = refFields{configMap: "configMap", secret: "secret", secretName: "name", has: withItems}
	keyRefs        = refFields{configMap: "configMapKeyRef", secret: "secretKeyRef", secretName: "name", has: withKey}
	envFromRefs    = refFields{configMap: "configMapRef", secret: "secretRef", secretName: "name"}
)

// refs reads mapping n, where an entry set to null stands for an absent one:
// it hands the reference object under f.configMap to configMap, the one
// under f.secret to secret, and any other entry to other (when not nil).
func (r *specReader) refs(n *yaml.Node, f refFields, configMap, secret func(reference), other func(k string, v *yaml.Node)) {
	r.presentFields(n, func(k string, v *yaml.Node) {
		switch {
		case k == f.configMap:
			configMap(r.reference(v, "name", f.has))
		case k == f.secret:
			secret(r.reference(v, f.secretName, f.has))
		case other != nil:
			other(k, v)
		}
	})
}

func (ref reference) local() corev1.LocalObjectReference {
	return corev1.LocalObjectReference{Name: ref.name}
}

func (r *specReader) volume(n *yaml.Node) corev1.Volume {
	var vol corev1.Volume
	r.refs(n, volumeRefs,
		func(ref reference) {
			vol.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: ref.local(), Items: ref.items, Optional: ref.optional}
		},
		func(ref reference) {
			vol.Secret = &corev1.SecretVolumeSource{SecretName: ref.name, Items: ref.items, Optional: ref.optional}
		},
		func(k string, v *yaml.Node) {
			if k != "projected" {
				return
			}
			vol.Projected = &corev1.ProjectedVolumeSource{}
			r.fields(v, func(pk string, pv *yaml.Node) {
				if pk == "sources" {
					r.list(pv, func(item *yaml.Node) { vol.Projected.Sources = append(vol.Projected.Sources, r.projection(item)) })
				}
			})
		})
	return vol
}

func (r *specReader) projection(n *yaml.Node) corev1.VolumeProjection {
	var p corev1.VolumeProjection
	r.refs(n, projectionRefs,
		func(ref reference) {
			p.ConfigMap = &corev1.ConfigMapProjection{LocalObjectReference: ref.local(), Items: ref.items, Optional: ref.optional}
		},
		func(ref reference) {
			p.Secret = &corev1.SecretProjection{LocalObjectReference: ref.local(), Items: ref.items, Optional: ref.optional}
		}, nil)
	return p
}

func (r *specReader) container(n *yaml.Node) corev1.Container {
	var c corev1.Container
	r.fields(n, func(k string, v *yaml.Node) {
		switch k {
		case "name":
			c.Name = r.str(v)
		case "env":
			r.list(v, func(item *yaml.Node) { c.Env = append(c.Env, r.envVar(item)) })
		case "envFrom":
			r.list(v, func(item *yaml.Node) { c.EnvFrom = append(c.EnvFrom, r.envFrom(item)) })
		}
	})
	return c
}

func (r *specReader) envVar(n *yaml.Node) corev1.EnvVar {
	var e corev1.EnvVar
	r.fields(n, func(k string, v *yaml.Node) {
		switch k {
		case "name":
			e.Name = r.str(v)
		case "valueFrom":
			if isNull(resolve(v)) {
				return
			}
			src := &corev1.EnvVarSource{}
			e.ValueFrom = src
			r.refs(v, keyRefs,
				func(ref reference) {
					src.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: ref.local(), Key: ref.key, Optional: ref.optional}
				},
				func(ref reference) {
					src.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: ref.local(), Key: ref.key, Optional: ref.optional}
				}, nil)
		}
	})
	return e
}

func (r *specReader) envFrom(n *yaml.Node) corev1.EnvFromSource {
	var e corev1.EnvFromSource
	r.refs(n, envFromRefs,
		func(ref reference) {
			e.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: ref.local(), Optional: ref.optional}
		},
		func(ref reference) {
			e.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: ref.local(), Optional: ref.optional}
		},
		nil)
	return e
}
