package inject

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/hasher"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/annotations"
	"github.com/confighash/confighash/internal/yamlnode"
)

// Workload is what the filter found for one workload of the stream.
type Workload struct {
	Object
	// Node is the workload document, Template its pod template.
	Node     *yaml.RNode `json:"-"`
	Template *yaml.RNode `json:"-"`
	// InList is true for a workload that is an item of a v1 List document
	// (kubectl and Helm create each item), Item its position in the items;
	// Node is then the item.
	InList bool
	Item   int
	// OptedOut is true when the workload carries enabled: "false".
	OptedOut bool
	// InStream are the uses whose object is in the stream; External the rest.
	InStream []hashing.Use
	External []hashing.Use
	// Hash is the value for the pod template; empty when nothing is consumed
	// from the stream.
	Hash string
	// warnings are findings about the workload's references (ambiguous
	// kustomize renames).
	warnings []string
	// nameOnly are the external uses (u.Ref()) of configs of the stream
	// whose content is not the cluster's, with why (see nameOnly).
	nameOnly map[string]nameOnly
}

// KeyID is the key id to write next to the hash: the key's in keyed mode
// when there is a hash, else none.
func (w Workload) KeyID(opts Options) string {
	if w.Hash == "" {
		return ""
	}
	return hashing.KeyID(opts.Key)
}

// ExternalValue renders the external uses for the workload annotation
// (annotations.FormatExternal).
func (w Workload) ExternalValue() string { return annotations.FormatExternal(w.External) }

// Report is the outcome of analysing a stream.
type Report struct {
	Workloads []Workload
	// Documents counts the documents read; Configs the ConfigMaps and
	// Secrets among them (List items included).
	Documents int
	Configs   int
	Findings  []Finding
}

// Doc is a parsed document with where it came from.
type Doc struct {
	// Node is the parsed document. A ConfigMap or Secret read without a
	// tree has Config instead.
	Node   *yaml.RNode
	Config *hashing.Content
	// Index is the document's position in the stream; Path its source file
	// (a kustomize path annotation or a Helm "# Source:" comment), if known.
	Index int
	Path  string
	// LineOffset is the number of lines of the stream before the text
	// Node was parsed from, when its lines count from that text: errors
	// about the document add it, to name lines of the stream.
	LineOffset int
	// Text is the text Node was parsed from, when its lines count from
	// that text: errors about the document name its lines as an editor
	// counts them (yamlnode.EditorLines), not as yaml.v3 does.
	Text []byte
	// Unseen says the text is one its user does not see: Helm 4 writes
	// each document anew, with its annotation, before its post-renderer
	// runs. Errors about the document name no line a node holds
	// (yamlnode.WithoutNodeLines); the object, field or key they name
	// finds it in the template.
	Unseen bool
}

// Lines returns err, an error about d, with the lines it names turned into
// lines of the stream as an editor shows them, or left out where the
// user does not see the text (Unseen).
func (d Doc) Lines(err error) error {
	if d.Unseen {
		err = yamlnode.WithoutNodeLines(err)
	}
	return yamlnode.ShiftErrorLine(yamlnode.EditorLines(d.Text, err), d.LineOffset)
}

// Analyze reads a stream without changing it: it indexes its ConfigMaps and
// Secrets, then computes every workload's uses and hash. Document positions
// and paths come from the kio reader's annotations when present.
func Analyze(nodes []*yaml.RNode, opts Options) (*Report, error) {
	docs := make([]Doc, len(nodes))
	for i, node := range nodes {
		docs[i] = Doc{Node: node, Index: i}
		// Older kustomize and kpt releases still send the legacy keys.
		docs[i].Path, _ = fileAnnotation(node.YNode(), kioutil.PathAnnotation, kioutil.LegacyPathAnnotation)       //nolint:staticcheck
		if index, ok := fileAnnotation(node.YNode(), kioutil.IndexAnnotation, kioutil.LegacyIndexAnnotation); ok { //nolint:staticcheck
			if n, err := strconv.Atoi(index); err == nil {
				docs[i].Index = n
			}
		}
	}
	return AnalyzeDocs(docs, opts)
}

// AnalyzeDocs is Analyze for documents whose position and source the caller
// knows. An error names the document it is about.
func AnalyzeDocs(docs []Doc, opts Options) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	objects := make([]Object, len(docs))
	configs := configIndex{byName: map[configKey]hashing.Content{}, nameOnly: map[configKey]nameOnly{}}
	var local []int
	for i, d := range docs {
		o, err := identify(d, opts)
		if err != nil {
			return nil, d.Lines(err)
		}
		objects[i] = o
		if opts.LeavesOut(d.Node) {
			local = append(local, i)
			continue
		}
		if err := configs.addDoc(d, o, opts); err != nil {
			return nil, d.Lines(err)
		}
	}
	// kustomize adds hash suffixes and fixes references to renamed objects
	// before it drops the local-config ones: a pod reading one reads, in the
	// cluster, a config of its final name, which the render does not hold.
	// They are indexed for their names only, after the others, so that one
	// of the same identity the render holds is the one read.
	for _, i := range local {
		if objects[i].isConfig() {
			if err := configs.add(docs[i].Node, objects[i], localConfigObject); err != nil {
				return nil, docs[i].Lines(err)
			}
		}
	}
	r := &Report{Documents: len(docs), Configs: configs.count()}
	add := func(node *yaml.RNode, o Object, item int) error {
		w, ok, err := analyzeWorkload(node, o, configs, opts)
		if err != nil {
			return err
		}
		if ok {
			w.InList, w.Item = item >= 0, max(item, 0)
			r.Workloads = append(r.Workloads, w)
			r.Findings = append(r.Findings, workloadFindings(w)...)
		} else if f, near := opts.nearMiss(o); near {
			r.Findings = append(r.Findings, f)
		}
		return nil
	}
	for i, d := range docs {
		if d.Node == nil || opts.LeavesOut(d.Node) {
			continue
		}
		if !objects[i].isList() {
			if err := add(d.Node, objects[i], -1); err != nil {
				return nil, d.Lines(err)
			}
			continue
		}
		for j, item := range listItems(d.Node) {
			if !objects[i].readItem(item) {
				continue
			}
			sub := Doc{Node: yaml.NewRNode(item), Index: d.Index, Path: d.Path}
			if opts.LeavesOut(sub.Node) {
				continue
			}
			o, err := identifyItem(objects[i], sub, opts)
			if err != nil {
				return nil, d.Lines(fmt.Errorf("%s: items[%d]: %w", objects[i], j, err))
			}
			if err := add(sub.Node, o, j); err != nil {
				return nil, d.Lines(err)
			}
		}
	}
	return r, nil
}

// isList reports whether the object is a list (a v1 List, a ConfigMapList,
// an apps/v1 DeploymentList): kubectl, Helm and kustomize create the items
// of any kind whose name ends in List one by one.
func (o Object) isList() bool { return strings.HasSuffix(o.Kind, "List") }

// readItem reports whether an item of the list o is read as an object. A
// v1 List's items must be objects (an item that is not one is an error, as
// kubectl makes it); a custom resource whose kind ends in List may hold
// other values under items, which are not confighash's to read.
func (o Object) readItem(item *yaml.Node) bool {
	return o.APIVersion == "v1" || item.Kind == yaml.MappingNode
}

// listItems returns the items of a List document; none when they are not a
// sequence.
func listItems(node *yaml.RNode) []*yaml.Node {
	items := yamlnode.Child(node.YNode(), "items")
	if items == nil || items.Kind != yaml.SequenceNode {
		return nil
	}
	return items.Content
}

func analyzeWorkload(node *yaml.RNode, o Object, configs configIndex, opts Options) (Workload, bool, error) {
	path, ok := opts.templatePath(o.group(), o.Kind)
	if !ok {
		return Workload{}, false, nil
	}
	w := Workload{Object: o, Node: node}
	enabled, present, isString := annotations.Value(node.YNode(), opts.Annotation(EnabledName))
	if present && !isString {
		return w, false, fmt.Errorf("%s: %w", o, annotations.NotStringError(node.YNode(), opts.Annotation(EnabledName)))
	}
	w.OptedOut = enabled == "false"
	tn := yamlnode.Path(node.YNode(), path...)
	if isNull(tn) || w.OptedOut {
		return w, !isNull(tn), nil
	}
	template := yaml.NewRNode(tn)
	if tn.Kind != yaml.MappingNode {
		return w, false, fmt.Errorf("%s: %s is not an object", o, strings.Join(path, "."))
	}
	if err := CheckMetadata(template); err != nil {
		return w, false, fmt.Errorf("%s: %s.%w", o, strings.Join(path, "."), err)
	}
	w.Template = template
	spec, err := podSpec(template)
	if err != nil {
		return w, false, fmt.Errorf("%s: %s.spec: %w", o, strings.Join(path, "."), err)
	}
	context, err := readBuildContext(node.YNode())
	if err != nil {
		return w, false, fmt.Errorf("%s: %w", o, err)
	}
	// References name objects as they will be once kustomize has fixed
	// them: in-stream uses carry the names the cluster will hold.
	r := &resolver{configs: configs, context: context, namespace: o.Namespace, written: o.written}
	uses, required := hashing.DiscoverRequired(spec)
	w.InStream, w.External = r.resolveUses(uses)
	for _, u := range w.External {
		if why := configs.nameOnly[configKey{o.Namespace, u.Kind, u.Name}]; why != readContent {
			if w.nameOnly == nil {
				w.nameOnly = map[string]nameOnly{}
			}
			w.nameOnly[u.Ref()] = why
		}
	}
	w.warnings = append(slices.Clip(r.findings), r.missingKeys(required)...)
	if len(w.InStream) > 0 {
		w.Hash = hashing.Compute(o.Namespace, w.InStream, r.lookup, hashing.Options{Key: opts.Key})
	}
	return w, true, nil
}

// configIndex holds the content of the stream's ConfigMaps and Secrets by
// namespace, kind and name, and those kustomize has renamed or moved.
type configIndex struct {
	byName  map[configKey]hashing.Content
	renamed []renamedConfig
	// nameOnly are the configs of the stream whose content is not the
	// cluster's, under each of their names, with why: byName holds them
	// with no keys, for their names only.
	nameOnly map[configKey]nameOnly
}

type configKey struct {
	namespace string
	kind      hashing.Kind
	name      string
}

// addDoc indexes a ConfigMap or Secret document, or those among the items
// of a list (isList).
func (c *configIndex) addDoc(d Doc, o Object, opts Options) error {
	if d.Config != nil {
		content := *d.Config
		content.Namespace = o.Namespace
		return c.put(o, content)
	}
	if o.isConfig() {
		return c.add(d.Node, o, readContent)
	}
	if !o.isList() {
		return nil
	}
	for i, item := range listItems(d.Node) {
		if !o.readItem(item) {
			continue
		}
		sub := Doc{Node: yaml.NewRNode(item), Index: d.Index, Path: d.Path}
		if opts.LeavesOut(sub.Node) {
			continue
		}
		io, err := identifyItem(o, sub, opts)
		if err != nil {
			return fmt.Errorf("%s: items[%d]: %w", o, i, err)
		}
		if io.isConfig() {
			if err := c.add(sub.Node, io, readContent); err != nil {
				return err
			}
		}
	}
	return nil
}

// nameOnly says why a config of the stream is indexed by name only, so
// that a reference resolves to its final name as to any config's, and is
// then external (lookup and resolve do not hand out its content).
type nameOnly int

const (
	// readContent: an ordinary config, its content the cluster's.
	readContent nameOnly = iota
	// clusterFills: the cluster writes its content (clusterFilled).
	clusterFills
	// localConfigObject: marked local-config, so left out of the render
	// after kustomize fixed the references to it.
	localConfigObject
	// sopsEncrypted: a config encrypted with SOPS, its values ciphertext
	// (EncryptedWithSOPS).
	sopsEncrypted
)

// add indexes a config; why is readContent, or localConfigObject for a
// local-config object, which gives way to a config of the same identity.
func (c *configIndex) add(node *yaml.RNode, o Object, why nameOnly) error {
	key := configKey{o.Namespace, hashing.Kind(o.Kind), o.Name}
	if _, dup := c.byName[key]; dup {
		if why == localConfigObject {
			return nil
		}
		return fmt.Errorf("%s: the stream holds this %s twice", o, o.Kind)
	}
	switch {
	case why != readContent:
	case clusterFilled(node, o):
		why = clusterFills
	case EncryptedWithSOPS(node.YNode(), hashing.Kind(o.Kind)):
		why = sopsEncrypted
	}
	content := hashing.Content{Kind: key.kind, Namespace: o.Namespace, Name: o.Name}
	var err error
	if why == readContent {
		if content, err = ReadContent(node.YNode(), hashing.Kind(o.Kind), o.Namespace, o.Name); err != nil {
			return fmt.Errorf("%s: %w", o, err)
		}
	}
	if content.Name, err = FinalName(node, o.Name); err != nil {
		return fmt.Errorf("%s: %w", o, err)
	}
	context, err := readBuildContext(node.YNode())
	if err != nil {
		return fmt.Errorf("%s: %w", o, err)
	}
	if content.Name != o.Name {
		// kustomize's hash suffix step, which runs after the functions and
		// before it fixes references, records the unsuffixed name as a
		// previous one (HashTransformer's StorePreviousId): from then on
		// the config competes for references to that name with the
		// configs renamed from it (a base next to a prefixed variant).
		context.previous = append(context.previous, previousID{kind: o.Kind, name: o.Name, namespace: effectiveNamespace(o.written)})
	}
	if context.previous != nil {
		c.renamed = append(c.renamed, renamedConfig{key: key, written: o.written, context: context})
	}
	if why != readContent {
		c.nameOnly[key] = why
		c.nameOnly[configKey{o.Namespace, key.kind, content.Name}] = why
	}
	return c.put(o, content)
}

// clusterFilled reports whether the object is a config whose content the
// cluster writes, not the render (hashing.ClusterFilled): a service account
// token Secret, into which the token controller writes token, ca.crt and
// namespace, or an OpenShift CA bundle ConfigMap (annotated
// service.beta.openshift.io/inject-cabundle or labelled
// config.openshift.io/inject-trusted-cabundle), into which an operator
// writes the bundle; charts and kustomizations create them with no data.
// Its rendered content is never what the cluster holds, so hashing it would
// roll its consumers as soon as the cluster fills it in; it is read as a
// config the stream does not hold, external, which the controller takes
// over from the live object.
func clusterFilled(node *yaml.RNode, o Object) bool {
	kind := hashing.Kind(o.Kind)
	if kind != hashing.KindSecret && kind != hashing.KindConfigMap {
		return false
	}
	meta := yamlnode.Child(node.YNode(), "metadata")
	_, filled := hashing.ClusterFilled(kind, yamlnode.Text(node.YNode(), "type"),
		marker(meta, "annotations", hashing.InjectCABundleAnnotation), marker(meta, "labels", hashing.InjectTrustedCABundleLabel))
	return filled
}

// EncryptedWithSOPS reports whether an object of that kind is a ConfigMap
// or Secret encrypted with SOPS, as Flux repositories keep them (mostly
// Secrets): a top-level sops field holds the encryption metadata and the
// values are ciphertext (under a Secret's data, not even base64). Flux's
// kustomize-controller decrypts every object whose sops field holds a MAC
// when it applies the render, so its rendered content is never what the
// cluster holds: it is read as a config the stream does not hold,
// external, which the controller hashes from the live, decrypted object.
// Its content is never read.
func EncryptedWithSOPS(n *yaml.Node, kind hashing.Kind) bool {
	return (kind == hashing.KindSecret || kind == hashing.KindConfigMap) && yamlnode.Child(n, sopsField) != nil
}

// sopsField is the top-level field SOPS adds to a document it encrypts.
const sopsField = "sops"

// marker is metadata.<field>.<name> of meta as a map, nil when it is not
// a string there: no map is made for the configs without it.
func marker(meta *yaml.Node, field, name string) map[string]string {
	v := yamlnode.Child(yamlnode.Child(meta, field), name)
	if v == nil || v.Kind != yaml.ScalarNode {
		return nil
	}
	return map[string]string{name: v.Value}
}

// put indexes content under the object's name and, when kustomize will
// rename it, under its final name too.
func (c configIndex) put(o Object, content hashing.Content) error {
	key := configKey{o.Namespace, hashing.Kind(o.Kind), o.Name}
	if _, dup := c.byName[key]; dup {
		return fmt.Errorf("%s: the stream holds this %s twice", o, o.Kind)
	}
	c.byName[key] = content
	if content.Name != o.Name {
		c.byName[configKey{o.Namespace, key.kind, content.Name}] = content
	}
	return nil
}

// count returns how many objects the index holds that the render will
// (a renamed object is indexed under both of its names; a local-config one
// is indexed for its names only).
func (c configIndex) count() int {
	n := 0
	for k, content := range c.byName {
		if k.name == content.Name && c.nameOnly[k] != localConfigObject {
			n++
		}
	}
	return n
}

func (c configIndex) lookup(namespace string) hashing.Lookup {
	return func(kind hashing.Kind, name string) (hashing.Content, bool) {
		key := configKey{namespace, kind, name}
		content, ok := c.byName[key]
		return content, ok && c.nameOnly[key] == readContent
	}
}

// fileAnnotation reads the first of the given annotations that is set.
func fileAnnotation(n *yaml.Node, keys ...string) (string, bool) {
	for _, k := range keys {
		if v, ok := Annotation(n, k); ok {
			return v, true
		}
	}
	return "", false
}

// needsHashSuffix is how kustomize marks a generated ConfigMap or Secret
// whose name gets a content-hash suffix after the functions have run.
const needsHashSuffix = "internal.config.kubernetes.io/needsHashSuffix"

// FinalName returns the name a ConfigMap or Secret of a kustomize
// function's input will have once kustomize has added its hash suffix,
// computed with kustomize's own hasher, so that the hash (and confighash
// diff) names the objects the cluster will hold. Any other object keeps
// name.
func FinalName(node *yaml.RNode, name string) (string, error) {
	if v, _ := Annotation(node.YNode(), needsHashSuffix); v != "enabled" {
		return name, nil
	}
	suffix, err := (&hasher.Hasher{}).Hash(node)
	if err != nil {
		return "", fmt.Errorf("computing kustomize's name suffix: %w", err)
	}
	return name + "-" + suffix, nil
}

func workloadFindings(w Workload) []Finding {
	var out []Finding
	for _, msg := range w.warnings {
		out = append(out, Finding{Object: w.Object, Severity: SeverityWarning, Message: msg})
	}
	for _, u := range w.External {
		f := Finding{Object: w.Object, Severity: SeverityWarning}
		if u.Optional {
			f.Severity = SeverityInfo
		}
		which := "which is not in the stream"
		switch w.nameOnly[u.Ref()] {
		case clusterFills:
			which = "which the cluster fills in (a service account token Secret, an OpenShift CA bundle ConfigMap)"
		case localConfigObject:
			which = "which is marked config.kubernetes.io/local-config (kustomize and kpt leave it out of the render)"
		case sopsEncrypted:
			which = "which is encrypted with SOPS (the render holds its ciphertext; Flux decrypts it when it applies the render)"
		}
		f.Message = fmt.Sprintf("consumes %s %s, %s: left out of the hash, recorded as external for the controller",
			u.Kind, hashing.ObjectName(w.Namespace, u.Name), which) + kustomizeVarHint(u)
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Severity < out[j].Severity })
	return out
}

// kustomizeVarHint says, for a name that holds a kustomize var ($(NAME)),
// why it may not be external at all: kustomize substitutes vars: only after
// its transformers ran, so the name confighash reads is not the one the
// render will hold, and replacements:, which kustomize runs before them,
// give confighash the final name.
func kustomizeVarHint(u hashing.Use) string {
	if !strings.Contains(u.Name, "$(") {
		return ""
	}
	return fmt.Sprintf("; its name holds a kustomize var, which kustomize substitutes only after its transformers ran: "+
		"if it names a %s of the render, the hash leaves it out (confighash verify on the render says so); "+
		"use replacements: instead of vars:, kustomize runs them before the transformers", u.Kind)
}

// HashHolder is the node whose annotations hold the workload's hash and key
// id: its pod template, or the workload itself for a Job, whose pod template
// cannot change after creation (see immutableTemplate); nil when the
// workload has no pod template.
func (w Workload) HashHolder() *yaml.RNode {
	if w.Template == nil {
		return nil
	}
	if w.TemplateImmutable() {
		return w.Node
	}
	return w.Template
}

// TemplateImmutable reports whether the API server refuses any change of
// the workload's pod template once it exists: a Job's (see
// immutableTemplate).
func (w Workload) TemplateImmutable() bool { return immutableTemplate(w.group(), w.Kind) }

// Rebind returns the workload with its nodes taken from another parse of
// the same document (one whose comments are exactly where the document has
// them, for writing it anew). For an item of a List, node is the List
// document.
func (w Workload) Rebind(node *yaml.RNode, opts Options) (Workload, error) {
	if w.InList {
		items := listItems(node)
		if w.Item >= len(items) {
			return w, fmt.Errorf("%s: items[%d] is not in the document", w.Object, w.Item)
		}
		node = yaml.NewRNode(items[w.Item])
	}
	w.Node = node
	if w.Template == nil {
		return w, nil
	}
	path, _ := opts.templatePath(w.group(), w.Kind)
	tn := yamlnode.Path(node.YNode(), path...)
	if tn == nil || tn.Kind != yaml.MappingNode {
		return w, fmt.Errorf("%s: %s is not an object", w.Object, strings.Join(path, "."))
	}
	w.Template = yaml.NewRNode(tn)
	return w, nil
}
