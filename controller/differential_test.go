package controller_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/kyaml/kio"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/annotations"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/testing/testtools"
	"github.com/confighash/confighash/postrenderer"
)

// The render and the controller compute one hash (DESIGN.md, HASHING.md
// section 6). These tests generate pod specs that mix every reference form
// HASHING.md section 2 lists and configs of every shape section 3 reads,
// render them in-process (the stream engine and the KRM filter), read the
// same objects as the API server hands them to the controller (typed,
// through the controller's cache transforms, a Secret's stringData merged
// into its data) and hold the two sides to each other: the same uses, the
// same external and missing configs and keys, the same hash for the
// in-stream configs, the same hash for every use once every config exists,
// and no roll on the first apply of a render.

// diffNamespace is the namespace the generated objects are applied to;
// diffOther holds configs of the same names that no workload may match.
const (
	diffNamespace = "ns"
	diffOther     = "other"
)

// diffMode is how a case's manifests place their objects.
type diffMode int

const (
	// modeNamed: every object names diffNamespace.
	modeNamed diffMode = iota
	// modeDefault: objects name diffNamespace or none; the render is told
	// diffNamespace (helm install -n).
	modeDefault
	// modeNone: objects name no namespace and the render is told none
	// (kustomize build | kubectl apply -n): it hashes with N empty.
	modeNone
)

// diffCase is one generated input: the stream to render, the configs the
// cluster holds besides (external, present), and the HMAC key of both
// sides (none for plain hashes).
type diffCase struct {
	mode diffMode
	key  []byte
	// prefix is the annotation prefix of both sides ("": the default).
	prefix   string
	stream   []client.Object
	external []client.Object
	// lists maps an index of stream to the number of objects, from there
	// on, that one v1 List document holds (kubectl and Helm create each
	// item); json writes the documents starting at these indexes as JSON.
	lists map[int]int
	json  map[int]bool
}

// documents groups the indexes of c.stream by the document holding them.
func (c diffCase) documents() [][]int {
	var out [][]int
	for i := 0; i < len(c.stream); {
		n := max(c.lists[i], 1)
		var doc []int
		for j := i; j < i+n; j++ {
			doc = append(doc, j)
		}
		out = append(out, doc)
		i += n
	}
	return out
}

// diffKey is the HMAC key of the keyed cases.
const diffKey = "differential-key"

// diffNames are the config names the pod specs refer to; each is a
// ConfigMap, a Secret, both or neither.
var diffNames = []string{"app", "db", "shared", "tls.certs", "x-1"}

// diffKeys are config keys: dots, dashes, underscores, a leading dot.
var diffKeys = []string{"a", "b", "LOG_LEVEL", "app.conf", "tls-crt", "x_y.z-w", ".hidden", "k8s_1"}

// diffValues are ConfigMap data and Secret stringData values: empty, white
// space, multi-line, words YAML 1.1 reads as booleans, numbers or null,
// text that looks like YAML, non-ASCII, and the line breaks YAML counts
// besides "\n" and "\r" (NEL, LINE and PARAGRAPH SEPARATOR).
var diffValues = []string{
	"", "v", " ", "multi\nline\n", "no newline\nat end", "yes", "on", "Off", "1", "1.5", "true", "null", "~",
	"  lead", "trail  ", "ünïcödé ✓", "# not a comment", "key: value", "- item", "{a: 1}", "'quoted'", "\"dq\"",
	"tab\there", "0x1F", "2001-12-14", "---", "...", "&anchor", "*alias", "!tag", "%", "@", "`",
	"crlf\r\n", "cr\ronly", "trailing \n", "\n\nlead", "end\n\n\n", " \n", "\t",
	"\ufeffbom", "1:20", "0o17", "y", "NO", "nel\u0085", "ls\u2028x", "ps\u2029",
}

// diffGen draws one case from r.
type diffGen struct {
	r *rand.Rand
	// complete draws a case in which every referenced config exists and
	// holds every key of diffKeys, so that the cluster can run the pods.
	complete bool
	// prefix is the case's annotation prefix.
	prefix string
}

func (g *diffGen) chance(p float64) bool { return g.r.Float64() < p }

func (g *diffGen) pick(from []string) string { return from[g.r.IntN(len(from))] }

// optional is absent, true or false.
func (g *diffGen) optional() *bool {
	switch g.r.IntN(3) {
	case 0:
		return nil
	case 1:
		return new(true)
	}
	return new(false)
}

// name is the name of a referenced config: mostly one of diffNames, now
// and then one no config has, or empty (a reference the kubelet ignores).
func (g *diffGen) name() string {
	if g.complete {
		return g.pick(diffNames)
	}
	switch g.r.IntN(20) {
	case 0:
		return "ghost"
	case 1:
		return ""
	}
	return g.pick(diffNames)
}

// key is a referenced key: one of diffKeys, now and then one no config has.
func (g *diffGen) key() string {
	if !g.complete && g.chance(0.05) {
		return "nokey"
	}
	return g.pick(diffKeys)
}

func (g *diffGen) items() []corev1.KeyToPath {
	switch g.r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []corev1.KeyToPath{} // consumes the whole object, like none
	}
	out := make([]corev1.KeyToPath, 1+g.r.IntN(3))
	for i := range out {
		out[i] = corev1.KeyToPath{Key: g.key(), Path: fmt.Sprintf("p%d", i)}
	}
	return out
}

func (g *diffGen) bytes() []byte {
	b := make([]byte, g.r.IntN(9))
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	if g.chance(0.3) {
		b = append(b, 0xff, 0xfe) // never UTF-8
	}
	return b
}

// keys draws a subset of diffKeys in random order.
func (g *diffGen) keys() []string {
	var out []string
	for _, i := range g.r.Perm(len(diffKeys)) {
		if g.complete || g.chance(0.35) {
			out = append(out, diffKeys[i])
		}
	}
	return out
}

func (g *diffGen) meta(name, ns string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: ns}
	if g.chance(0.2) {
		m.Labels = map[string]string{"app.kubernetes.io/version": "1.2.3"}
	}
	if g.chance(0.1) {
		m.Annotations = map[string]string{"team": "x"}
	}
	return m
}

// put sets m[key], making the map first if it is nil: a generated object
// leaves a map it never fills nil, as one decoded from YAML does.
func put[V any](m *map[string]V, key string, value V) {
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[key] = value
}

func (g *diffGen) configMap(name, ns string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: g.meta(name, ns)}
	for _, k := range g.keys() {
		if g.chance(0.7) {
			put(&cm.Data, k, g.pick(diffValues))
		} else {
			put(&cm.BinaryData, k, g.bytes())
		}
	}
	if g.chance(0.15) {
		cm.Immutable = new(g.chance(0.5))
	}
	return cm
}

func (g *diffGen) secret(name, ns string) *corev1.Secret {
	s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: g.meta(name, ns)}
	for _, k := range g.keys() {
		if g.chance(0.7) {
			put(&s.Data, k, g.bytes())
		}
		// stringData overlaps data now and then: it wins.
		if g.chance(0.4) {
			put(&s.StringData, k, g.pick(diffValues))
		}
	}
	switch g.r.IntN(5) {
	case 0:
		s.Type = corev1.SecretTypeOpaque
	case 1:
		s.Type = corev1.SecretTypeTLS
		put(&s.Data, corev1.TLSCertKey, []byte("cert"))
		put(&s.Data, corev1.TLSPrivateKeyKey, []byte("key"))
	case 2:
		s.Type = corev1.SecretTypeDockerConfigJson
		put(&s.StringData, corev1.DockerConfigJsonKey, `{"auths":{}}`)
	}
	if g.chance(0.15) {
		s.Immutable = new(g.chance(0.5))
	}
	return s
}

func (g *diffGen) container(name string) corev1.EphemeralContainerCommon {
	c := corev1.EphemeralContainerCommon{Name: name, Image: "registry.example/app:1"}
	for range g.r.IntN(3) {
		src := corev1.EnvFromSource{}
		if g.chance(0.4) {
			src.Prefix = "P_"
		}
		if g.chance(0.5) {
			src.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: g.name()}, Optional: g.optional()}
		} else {
			src.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: g.name()}, Optional: g.optional()}
		}
		c.EnvFrom = append(c.EnvFrom, src)
	}
	for i := range g.r.IntN(4) {
		e := corev1.EnvVar{Name: fmt.Sprintf("E%d", i)}
		switch g.r.IntN(5) {
		case 0:
			e.Value = "plain"
		case 1:
			e.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}
		case 2, 3:
			e.ValueFrom = &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: g.name()}, Key: g.key(), Optional: g.optional()}}
		default:
			e.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: g.name()}, Key: g.key(), Optional: g.optional()}}
		}
		c.Env = append(c.Env, e)
	}
	return c
}

func (g *diffGen) volume(i int) corev1.Volume {
	v := corev1.Volume{Name: fmt.Sprintf("v%d", i)}
	switch g.r.IntN(5) {
	case 0:
		v.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: g.name()}, Items: g.items(), Optional: g.optional()}
	case 1:
		v.Secret = &corev1.SecretVolumeSource{SecretName: g.name(), Items: g.items(), Optional: g.optional()}
	case 2, 3:
		p := &corev1.ProjectedVolumeSource{}
		for range 1 + g.r.IntN(3) {
			switch g.r.IntN(4) {
			case 0:
				p.Sources = append(p.Sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: g.name()}, Items: g.items(), Optional: g.optional()}})
			case 1:
				p.Sources = append(p.Sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: g.name()}, Items: g.items(), Optional: g.optional()}})
			case 2:
				p.Sources = append(p.Sources, corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{
					Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}})
			default:
				p.Sources = append(p.Sources, corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}})
			}
		}
		v.Projected = p
	default:
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	return v
}

func (g *diffGen) podSpec() corev1.PodSpec {
	var spec corev1.PodSpec
	for i := range 1 + g.r.IntN(2) {
		c := g.container(fmt.Sprintf("c%d", i))
		spec.Containers = append(spec.Containers, corev1.Container{Name: c.Name, Image: c.Image, Env: c.Env, EnvFrom: c.EnvFrom})
	}
	if g.chance(0.4) {
		c := g.container("init")
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: c.Name, Image: c.Image, Env: c.Env, EnvFrom: c.EnvFrom})
	}
	if g.chance(0.2) {
		spec.EphemeralContainers = append(spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: g.container("debug")})
	}
	for i := range g.r.IntN(4) {
		spec.Volumes = append(spec.Volumes, g.volume(i))
	}
	for range g.r.IntN(3) {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: g.name()})
	}
	return spec
}

// diffKinds are the kinds generated: those the render hashes, and a bare
// Pod, which it leaves alone (it has no pod template).
var diffKinds = []string{"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Rollout", "Pod"}

func (g *diffGen) workload(kind, name, ns string) client.Object {
	meta := g.meta(name, ns)
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: g.podSpec()}
	prefix := g.prefix
	if g.chance(0.1) {
		prefix = "" // the default's annotations, foreign to another prefix
	}
	if g.chance(0.1) {
		// A stale render: the render must replace both.
		tmpl.Annotations = map[string]string{annotations.Key(prefix, annotations.Hash): hashing.PlainPrefix + strings.Repeat("0", 64)}
		put(&meta.Annotations, annotations.Key(prefix, annotations.External), "ConfigMap/stale")
	}
	switch g.r.IntN(20) {
	case 0:
		put(&meta.Annotations, annotations.Key(prefix, annotations.Enabled), "false")
	case 1:
		put(&meta.Annotations, annotations.Key(prefix, annotations.Enabled), "true")
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	apps := metav1.TypeMeta{APIVersion: "apps/v1", Kind: kind}
	batch := metav1.TypeMeta{APIVersion: "batch/v1", Kind: kind}
	switch kind {
	case "Deployment":
		return &appsv1.Deployment{TypeMeta: apps, ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: selector, Template: tmpl}}
	case "StatefulSet":
		return &appsv1.StatefulSet{TypeMeta: apps, ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Selector: selector, Template: tmpl}}
	case "DaemonSet":
		return &appsv1.DaemonSet{TypeMeta: apps, ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: selector, Template: tmpl}}
	case "ReplicaSet":
		return &appsv1.ReplicaSet{TypeMeta: apps, ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Selector: selector, Template: tmpl}}
	case "Job":
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		return &batchv1.Job{TypeMeta: batch, ObjectMeta: meta, Spec: batchv1.JobSpec{Template: tmpl}}
	case "CronJob":
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		return &batchv1.CronJob{TypeMeta: batch, ObjectMeta: meta, Spec: batchv1.CronJobSpec{Schedule: "0 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}}
	case "Rollout":
		// Argo Rollouts' spec is a Deployment's, as far as the template goes.
		spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&appsv1.DeploymentSpec{Selector: selector, Template: tmpl})
		if err != nil {
			panic(err)
		}
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetGroupVersionKind(controller.RolloutGVK)
		u.SetName(name)
		u.SetNamespace(ns)
		u.SetLabels(meta.Labels)
		u.SetAnnotations(meta.Annotations)
		return u
	}
	meta.Annotations = tmpl.Annotations
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta, Spec: tmpl.Spec}
}

// generate draws a case: for each name of diffNames and each kind, the
// config is in the stream, only in the cluster (external), in the stream
// but in another namespace, or nowhere; one to three workloads.
func (g *diffGen) generate() diffCase {
	c := diffCase{mode: diffMode(g.r.IntN(3)), lists: map[int]int{}, json: map[int]bool{}}
	g.complete = g.chance(0.3)
	g.prefix = ""
	if g.chance(0.15) {
		g.prefix = "cfg.example.com"
	}
	c.prefix = g.prefix
	if g.chance(0.25) {
		c.key = []byte(diffKey)
	}
	ns := func() string {
		if c.mode == modeNamed || (c.mode == modeDefault && g.chance(0.5)) {
			return diffNamespace
		}
		return ""
	}
	var configs []client.Object
	for _, name := range diffNames {
		for _, secret := range []bool{false, true} {
			config := func(ns string) client.Object {
				if secret {
					return g.secret(name, ns)
				}
				return g.configMap(name, ns)
			}
			n := g.r.IntN(20)
			if g.complete {
				n %= 13
			}
			switch {
			case n < 9:
				configs = append(configs, config(ns()))
			case n < 13:
				c.external = append(c.external, config(ns()))
			case n < 16:
				configs = append(configs, config(diffOther))
			}
		}
	}
	var workloads []client.Object
	for i := range 1 + g.r.IntN(3) {
		wns := ns()
		if g.chance(0.15) {
			wns = diffOther // consumes the configs of another namespace
		}
		workloads = append(workloads, g.workload(g.pick(diffKinds), fmt.Sprintf("w%d", i), wns))
	}
	// Configs before, after or among the workloads.
	c.stream = slices.Concat(configs, workloads)
	g.r.Shuffle(len(c.stream), func(i, j int) { c.stream[i], c.stream[j] = c.stream[j], c.stream[i] })
	for i := 0; i < len(c.stream); i++ {
		if g.chance(0.5) {
			c.json[i] = true
		}
		if n := 2 + g.r.IntN(3); g.chance(0.05) && i+n <= len(c.stream) {
			c.lists[i] = n
			i += n - 1
		}
	}
	return c
}

// marshal writes each object as a document: YAML, or JSON for the
// indexes in asJSON.
func marshal(t testing.TB, objs []client.Object, asJSON map[int]bool) [][]byte {
	t.Helper()
	docs := make([][]byte, len(objs))
	for i, o := range objs {
		docs[i] = marshalDoc(t, o, asJSON[i])
	}
	return docs
}

// marshalDoc writes v as a YAML or JSON document.
func marshalDoc(t testing.TB, v any, asJSON bool) []byte {
	t.Helper()
	var doc []byte
	var err error
	if asJSON {
		doc, err = json.Marshal(v)
		doc = append(doc, '\n')
	} else {
		doc, err = sigsyaml.Marshal(v)
	}
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return doc
}

// marshalStream writes the documents of c.stream (groups, c.documents()).
func marshalStream(t testing.TB, c diffCase, groups [][]int) [][]byte {
	t.Helper()
	docs := make([][]byte, len(groups))
	for i, g := range groups {
		if c.lists[g[0]] == 0 {
			docs[i] = marshalDoc(t, c.stream[g[0]], c.json[g[0]])
			continue
		}
		items := make([]client.Object, len(g))
		for j, k := range g {
			items[j] = c.stream[k]
		}
		docs[i] = marshalDoc(t, map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, c.json[g[0]])
	}
	// kubectl reads the first document as JSON when it is (a "---" line
	// ends that; later documents are YAML to it), which keeps a NEL that
	// YAML reads as a line break: the render refuses a NEL written as it
	// is there, so the first document writes it escaped, which both
	// readings take for a NEL (yamlnode.CheckJSONPrefix).
	if len(groups) > 0 && c.json[groups[0][0]] {
		docs[0] = bytes.ReplaceAll(docs[0], []byte("\u0085"), []byte(`\u0085`))
	}
	return docs
}

// decodeDoc reads the objects of one document of c.stream as the API
// server stores them (asServed): the document's, or its List's items.
func decodeDoc(t testing.TB, c diffCase, group []int, doc []byte) []client.Object {
	t.Helper()
	if c.lists[group[0]] == 0 {
		return []client.Object{asServed(t, c.stream[group[0]], doc)}
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := sigsyaml.Unmarshal(doc, &list); err != nil || len(list.Items) != len(group) {
		t.Fatalf("reading a List of %d items (%v):\n%s", len(group), err, doc)
	}
	out := make([]client.Object, len(group))
	for j, k := range group {
		out[j] = decodeServed(t, c.stream[k], list.Items[j], json.Unmarshal)
	}
	return out
}

// join makes a stream of documents.
func join(docs ...[][]byte) []byte {
	return bytes.Join(slices.Concat(docs...), []byte("---\n"))
}

// documents splits a stream join made (and the render edited), each
// document with its final line break.
func documents(stream []byte) [][]byte {
	docs := bytes.Split(stream, []byte("\n---\n"))
	for i := range docs[:len(docs)-1] {
		docs[i] = append(docs[i], '\n')
	}
	return docs
}

// asServed decodes a document into an object of like's type as the API
// server stores it, in namespace diffNamespace when it names none
// (kubectl apply -n): typed, a Secret's stringData merged into its data.
func asServed(t testing.TB, like client.Object, doc []byte) client.Object {
	t.Helper()
	// A JSON document of a YAML stream too: Helm and kubectl read each
	// document of a stream with sigs.k8s.io/yaml (HASHING.md, section 3).
	// The first document, which kubectl reads as JSON, reads the same
	// either way (marshalStream escapes its NELs).
	return decodeServed(t, like, doc, func(b []byte, v any) error { return sigsyaml.Unmarshal(b, v) })
}

// decodeServed is asServed reading doc with unmarshal: json.Unmarshal for a
// List's item, which kubectl reads as JSON once it has read the List (a NEL
// the List wrote as "\u0085" is a NEL in the item, which reading the item
// as YAML again would make a space).
func decodeServed(t testing.TB, like client.Object, doc []byte, unmarshal func([]byte, any) error) client.Object {
	t.Helper()
	obj, _ := reflect.New(reflect.TypeOf(like).Elem()).Interface().(client.Object)
	if err := unmarshal(doc, obj); err != nil {
		t.Fatalf("decoding %T: %v\n%s", like, err, doc)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(diffNamespace)
	}
	if s, ok := obj.(*corev1.Secret); ok {
		for k, v := range s.StringData {
			put(&s.Data, k, []byte(v))
		}
		s.StringData = nil
	}
	return obj
}

// missingKeyWarning is the render's warning about required keys an
// in-stream config lacks.
var missingKeyWarning = regexp.MustCompile(`^reads keys? (.+) of (ConfigMap|Secret) (\S+), which has no such key`)

// renderMissing is what the render says pods cannot start without, in the
// controller's words (Input.Missing): the required external configs, and
// the required keys of in-stream configs that they lack.
func renderMissing(w inject.Workload, findings []inject.Finding) []string {
	var out []string
	for _, u := range w.External {
		if !u.Optional {
			out = append(out, u.Ref())
		}
	}
	for _, f := range findings {
		if f.Object.Kind != w.Kind || f.Object.Name != w.Name {
			continue
		}
		m := missingKeyWarning.FindStringSubmatch(f.Message)
		if m == nil {
			continue
		}
		name := m[3][strings.LastIndexByte(m[3], '/')+1:]
		for k := range strings.SplitSeq(m[1], ", ") {
			out = append(out, m[2]+"/"+name+" key "+k)
		}
	}
	slices.Sort(out)
	return out
}

func findWorkload(r *inject.Report, kind, name string) (inject.Workload, bool) {
	for _, w := range r.Workloads {
		if w.Kind == kind && w.Name == name {
			return w, true
		}
	}
	return inject.Workload{}, false
}

func refs(uses []hashing.Use) []string {
	out := make([]string, 0, len(uses))
	for _, u := range uses {
		out = append(out, u.Ref())
	}
	slices.Sort(out)
	return out
}

// canonicalUses sorts uses and their keys, for comparing two lists.
func canonicalUses(uses []hashing.Use) []hashing.Use {
	out := make([]hashing.Use, len(uses))
	for i, u := range uses {
		u.Keys = slices.Compact(slices.Sorted(slices.Values(u.Keys)))
		if len(u.Keys) == 0 {
			u.Keys = nil
		}
		out[i] = u
	}
	hashing.SortUses(out)
	return out
}

func trueSet(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// diffStats counts what the generated cases compared.
type diffStats struct {
	cases, lists, workloads, pods, jobs, optedOut, unmanaged, inStream, allExist, external, blocked, missingKeys int
}

func (s diffStats) String() string {
	return fmt.Sprintf("%d cases (%d List documents), %d workloads (%d opted out, %d consuming nothing, %d bare Pods, %d Jobs, render side only); compared: %d in-stream hashes, %d hashes with every config present, %d with external configs, %d blocked (%d of them on a missing key)",
		s.cases, s.lists, s.workloads, s.optedOut, s.unmanaged, s.pods, s.jobs, s.inStream, s.allExist, s.external, s.blocked, s.missingKeys)
}

// checkCase renders c and compares every workload with what the
// controller computes for it.
func checkCase(t testing.TB, obs *controller.Observer, c diffCase, stats *diffStats) {
	t.Helper()
	stats.cases++
	stats.lists += len(c.lists)
	groups := c.documents()
	inDocs, extDocs := marshalStream(t, c, groups), marshal(t, c.external, nil)
	input := join(inDocs)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\nkey %q, prefix %q, mode %d\ninput:\n%s\nexternal:\n%s", fmt.Sprintf(format, args...), c.key, c.prefix, c.mode, input, join(extDocs))
	}
	opts := inject.Options{Key: c.key, Prefix: c.prefix}
	if c.mode == modeDefault {
		opts.DefaultNamespace = diffNamespace
	}
	out, report, err := postrenderer.Process(input, opts)
	if err != nil {
		fail("the stream engine refused a generated stream: %v", err)
	}
	// The KRM filter, in-process, on the same stream.
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(input), OmitReaderAnnotations: true}).Read()
	if err != nil {
		fail("kio: %v", err)
	}
	var krm inject.Report
	if _, err := (inject.Filter{Options: opts, Report: &krm}).Filter(nodes); err != nil {
		fail("the KRM filter refused a generated stream: %v", err)
	}
	if len(krm.Workloads) != len(report.Workloads) {
		fail("stream engine found %d workloads, KRM filter %d", len(report.Workloads), len(krm.Workloads))
	}
	for i, w := range report.Workloads {
		k := krm.Workloads[i]
		if w.Kind != k.Kind || w.Name != k.Name || w.Hash != k.Hash || w.ExternalValue() != k.ExternalValue() {
			fail("stream engine %s/%s hash %q external %q; KRM filter %s/%s hash %q external %q",
				w.Kind, w.Name, w.Hash, w.ExternalValue(), k.Kind, k.Name, k.Hash, k.ExternalValue())
		}
	}
	// The same stream with the external configs in it, rendered in the
	// namespace the cluster holds: what the render would hash if every
	// config the cluster holds were in the stream.
	fullReport := report
	if len(c.external) > 0 || c.mode == modeNone {
		if _, fullReport, err = postrenderer.Process(join(inDocs, extDocs), inject.Options{Key: c.key, Prefix: c.prefix, DefaultNamespace: diffNamespace}); err != nil {
			fail("rendering with the external configs: %v", err)
		}
	}

	docs := documents(out)
	if len(docs) != len(groups) {
		fail("%d documents out, %d in", len(docs), len(groups))
	}
	// What kubectl or Helm apply: every object of the output, and whether
	// the render left it as it was.
	type applied struct {
		obj       client.Object
		unchanged bool
	}
	var cluster []client.Object
	var workloads []applied
	for i, g := range groups {
		objs := decodeDoc(t, c, g, docs[i])
		unchanged := bytes.Equal(docs[i], inDocs[i])
		var before []client.Object
		if !unchanged {
			before = decodeDoc(t, c, g, inDocs[i])
		}
		for j, o := range objs {
			a := applied{obj: o, unchanged: unchanged || reflect.DeepEqual(o, before[j])}
			if !isConfig(o) {
				// The render writes its annotations and nothing else.
				if !a.unchanged && !reflect.DeepEqual(withoutAnnotations(o, c.prefix), withoutAnnotations(before[j], c.prefix)) {
					fail("the render changed %T %s beyond its annotations:\n%s", o, o.GetName(), docs[i])
				}
				workloads = append(workloads, a)
				continue
			}
			if !a.unchanged {
				fail("the render changed %T %s:\n%s", o, o.GetName(), docs[i])
			}
			cluster = append(cluster, o)
		}
	}
	for i, doc := range extDocs {
		cluster = append(cluster, asServed(t, c.external[i], doc))
	}
	ctx := context.Background()
	for _, a := range workloads {
		obj := a.obj
		kind, name := obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName()
		w, found := findWorkload(report, kind, name)
		if kind == "Pod" {
			stats.pods++
			if found || !a.unchanged {
				fail("the render hashed or changed a bare Pod %s", name)
			}
			continue
		}
		if !found {
			fail("the render did not report %s %s", kind, name)
		}
		checkWorkload(t, fail, obs, ctx, c, obj, w, fullReport, cluster, stats)
	}
}

// withoutAnnotations is a copy of a workload without the annotations the
// render writes (and without annotation maps left empty).
func withoutAnnotations(o client.Object, prefix string) client.Object {
	o, _ = o.DeepCopyObject().(client.Object)
	keys := []string{annotations.Key(prefix, annotations.Hash), annotations.Key(prefix, annotations.KeyID), annotations.Key(prefix, annotations.External)}
	drop := func(m map[string]string) map[string]string {
		for _, k := range keys {
			delete(m, k)
		}
		if len(m) == 0 {
			return nil
		}
		return m
	}
	o.SetAnnotations(drop(o.GetAnnotations()))
	if u, ok := o.(*unstructured.Unstructured); ok {
		path := []string{"spec", "template", "metadata", "annotations"}
		m, _, _ := unstructured.NestedStringMap(u.Object, path...)
		if m = drop(m); m == nil {
			unstructured.RemoveNestedField(u.Object, path...)
		} else {
			_ = unstructured.SetNestedStringMap(u.Object, m, path...)
		}
		return u
	}
	tmpl := renderedTemplate(o)
	tmpl.Annotations = drop(tmpl.Annotations)
	return o
}

func isConfig(o client.Object) bool {
	switch o.(type) {
	case *corev1.ConfigMap, *corev1.Secret:
		return true
	}
	return false
}

func checkWorkload(t testing.TB, fail func(string, ...any), obs *controller.Observer, ctx context.Context, c diffCase,
	obj client.Object, w inject.Workload, fullReport *inject.Report, cluster []client.Object, stats *diffStats) {
	t.Helper()
	stats.workloads++
	id := w.Kind + "/" + w.Name
	holder := renderedTemplate(obj).Annotations
	_, job := obj.(*batchv1.Job)
	if job {
		// The API server refuses changes of a Job's pod template: its hash
		// is on the Job.
		holder = obj.GetAnnotations()
	}
	if got := holder[annotations.Key(c.prefix, annotations.Hash)]; !w.OptedOut && got != w.Hash {
		fail("%s: the output carries hash %q, the report %q", id, got, w.Hash)
	}
	if got := obj.GetAnnotations()[annotations.Key(c.prefix, annotations.External)]; !w.OptedOut && got != w.ExternalValue() {
		fail("%s: the output lists external %q, the report %q", id, got, w.ExternalValue())
	}
	if job {
		// The controller manages no Job: its pods run once, nothing rolls.
		stats.jobs++
		return
	}
	in, v, err := obs.Observe(ctx, obj, cluster)
	if err != nil {
		fail("%s: the controller: %v", id, err)
	}
	if w.OptedOut {
		if v.Managed {
			fail("%s: opted out, yet the controller manages it", id)
		}
		stats.optedOut++
		return
	}
	enabled := obj.GetAnnotations()[annotations.Key(c.prefix, annotations.Enabled)] == "true"
	if want := w.Hash != "" || len(w.External) > 0 || enabled; v.Managed != want {
		fail("%s: the controller manages it: %t; the render wrote hash %q, external %q", id, v.Managed, w.Hash, w.ExternalValue())
	}
	if !v.Managed {
		stats.unmanaged++
		return
	}
	if len(w.External) > 0 {
		stats.external++
	}
	renderUses := canonicalUses(append(slices.Clone(w.InStream), w.External...))
	if got := canonicalUses(v.Uses); fmt.Sprint(got) != fmt.Sprint(renderUses) {
		fail("%s: uses differ\nrender:     %+v\ncontroller: %+v", id, renderUses, got)
	}
	wantExternal := refs(w.External)
	if w.Hash == "" {
		wantExternal = refs(renderUses)
	}
	if got := trueSet(v.External); !slices.Equal(got, wantExternal) {
		fail("%s: external differ\nrender:     %q\ncontroller: %q", id, wantExternal, got)
	}
	if w.Hash != "" {
		live := in.LiveIn
		if w.Namespace == "" { // a render that knew no namespace
			live = in.LiveInUnnamespaced
		}
		if v.RenderHash != w.Hash || live != w.Hash {
			fail("%s: in-stream hash differs\nrender:     %s\ncontroller: %s (LiveIn %s, unnamespaced %s)", id, w.Hash, v.RenderHash, in.LiveIn, in.LiveInUnnamespaced)
		}
		stats.inStream++
	}
	fw, ok := findWorkload(fullReport, w.Kind, w.Name)
	if !ok {
		fail("%s: missing from the render with the external configs", id)
	}
	if want, got := renderMissing(fw, fullReport.Findings), slices.Sorted(slices.Values(in.Missing)); !slices.Equal(want, got) {
		fail("%s: missing differ\nrender:     %q\ncontroller: %q", id, want, got)
	}
	if len(fw.External) == 0 && len(fw.InStream) > 0 {
		if in.LiveAll != fw.Hash {
			fail("%s: every config exists, yet the hashes differ\nrender:     %s\ncontroller: %s", id, fw.Hash, in.LiveAll)
		}
		stats.allExist++
	}
	d := controller.Decide(in)
	if d.Action == controller.ActionBlocked {
		stats.blocked++
		if strings.Contains(strings.Join(in.Missing, ","), " key ") {
			stats.missingKeys++
		}
	}
	switch {
	case len(in.Missing) > 0 && d.Action != controller.ActionBlocked:
		fail("%s: missing %q, yet the decision is %s", id, in.Missing, d.Action)
	case d.Action == controller.ActionRoll:
		fail("%s: the first apply of a render rolls (%s, changed %q)", id, d.Reason, d.Changed)
	}
}

func renderedTemplate(obj client.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	case *appsv1.ReplicaSet:
		return &o.Spec.Template
	case *batchv1.Job:
		return &o.Spec.Template
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template
	case *unstructured.Unstructured:
		var tmpl corev1.PodTemplateSpec
		if m, found, err := unstructured.NestedMap(o.Object, "spec", "template"); err == nil && found {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &tmpl)
		}
		return &tmpl
	}
	return &corev1.PodTemplateSpec{}
}

// diffObservers holds an Observer for each key and prefix of the cases.
type diffObservers map[string]*controller.Observer

// of returns the Observer with the options of c.
func (o diffObservers) of(t testing.TB, c diffCase) *controller.Observer {
	t.Helper()
	id := fmt.Sprintf("%q %q", c.key, c.prefix)
	if obs := o[id]; obs != nil {
		return obs
	}
	opts := controller.DefaultOptions()
	opts.Key, opts.AnnotationPrefix = c.key, c.prefix
	obs, err := controller.NewObserver(opts)
	if err != nil {
		t.Fatal(err)
	}
	o[id] = obs
	return obs
}

// diffSeeds are the seeds of the generated cases go test runs.
var diffSeeds = []uint64{1, 2, 3, 0x5eed, 20261125}

// diffCasesPerSeed keeps the run around a second.
const diffCasesPerSeed = 400

func TestRenderAndControllerAgreeOnGeneratedPodSpecs(t *testing.T) {
	t.Parallel()
	for _, seed := range diffSeeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			observers := diffObservers{}
			g := &diffGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
			var stats diffStats
			for range diffCasesPerSeed {
				c := g.generate()
				checkCase(t, observers.of(t, c), c, &stats)
			}
			t.Log(stats)
		})
	}
}

// byteSource is a rand.Source that reads the fuzzer's bytes, then a PCG
// seeded from them once they run out.
type byteSource struct {
	data []byte
	rest *rand.PCG
}

func newByteSource(data []byte) *byteSource {
	h := fnv.New64a()
	_, _ = h.Write(data)
	return &byteSource{data: data, rest: rand.NewPCG(h.Sum64(), uint64(len(data)))}
}

func (s *byteSource) Uint64() uint64 {
	if len(s.data) == 0 {
		return s.rest.Uint64()
	}
	var b [8]byte
	n := copy(b[:], s.data)
	s.data = s.data[n:]
	return binary.LittleEndian.Uint64(b[:])
}

// FuzzRenderAndController lets the fuzzer's bytes drive the generator of
// TestRenderAndControllerAgreeOnGeneratedPodSpecs. Inputs it found are kept
// in testdata/differential.
func FuzzRenderAndController(f *testing.F) {
	testtools.AddSeedFiles(f, "testdata/differential/*")
	for _, seed := range diffSeeds {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], seed)
		f.Add(b[:])
	}
	observers := diffObservers{}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &diffGen{r: rand.New(newByteSource(data))}
		c := g.generate()
		checkCase(t, observers.of(t, c), c, &diffStats{})
	})
}
