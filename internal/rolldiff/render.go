package rolldiff

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/yamlnode"
	"github.com/confighash/confighash/internal/yamlnorm"
)

// Render is one side of a diff: the analysed stream and the content of its
// ConfigMaps and Secrets.
type Render struct {
	// Name says where the render came from (a file name, or "-").
	Name    string
	report  *inject.Report
	configs map[configRef]hashing.Content
	opts    inject.Options
}

// Report is the render-time analysis of the render: its workloads, as
// confighash reads them with the options given to Read.
func (r *Render) Report() *inject.Report { return r.report }

// configRef names one ConfigMap or Secret of a render.
type configRef struct {
	Kind      hashing.Kind
	Namespace string
	Name      string
}

func (c configRef) String() string {
	return string(c.Kind) + " " + hashing.ObjectName(c.Namespace, c.Name)
}

// Read parses a render: a plain multi-document YAML (or JSON) stream, or a
// KRM ResourceList whose items are the objects. name is used in errors.
func Read(name string, input []byte, opts inject.Options) (*Render, error) {
	nodes, opts, err := ReadObjects(input, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	report, err := inject.Analyze(nodes, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	first := map[workloadKey]inject.Workload{}
	for _, w := range report.Workloads {
		if f, twice := first[keyOf(w)]; twice {
			// Which one the cluster ends with depends on the tool that
			// applies the render: diff cannot say what rolls.
			return nil, fmt.Errorf("%s: %s %s is in the render twice (documents %d and %d): remove one", name, w.Kind, hashing.ObjectName(w.Namespace, w.Name), f.Index, w.Index)
		}
		first[keyOf(w)] = w
	}
	r := &Render{Name: name, report: report, configs: map[configRef]hashing.Content{}, opts: opts}
	for i, n := range nodes {
		if err := r.addConfigs(n, "", "", opts); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
	}
	return r, nil
}

// ReadObjects parses a plain multi-document YAML (or JSON) stream, or a KRM
// ResourceList, into its objects (a ResourceList's items), read as the
// render, kubectl and the API server read them: anchors, aliases and merge
// keys expanded, and a key written twice in a mapping an error naming the
// document or item. A v1 List stays one document, as the render reads it.
// It returns opts as the objects are to be read with: for a ResourceList,
// with SkipLocalConfig, as the KRM function reads its items.
func ReadObjects(input []byte, opts inject.Options) ([]*yaml.RNode, inject.Options, error) {
	docs, err := readDocuments(input)
	if err != nil {
		return nil, opts, fmt.Errorf("reading the render: %w", err)
	}
	if len(docs) == 1 && yamlnode.Text(docs[0].YNode(), "kind") == kio.ResourceListKind {
		opts.SkipLocalConfig = true
		items, err := resourceListItems(docs[0].YNode())
		return items, opts, err
	}
	for i, d := range docs {
		if _, err := yamlnorm.Normalise(d.YNode()); err != nil {
			return nil, opts, fmt.Errorf("document %d: %w", i, err)
		}
	}
	return docs, opts, nil
}

// separator is a document separator line, as kio.ByteReader splits on.
var separator = regexp.MustCompile(`\n---.*\n`)

// readDocuments splits input into its non-empty YAML documents as
// kio.ByteReader does (a "---" line; CRLF read as LF), and refuses a
// document followed by another without a "---" line between them (after
// "...", or a JSON stream), which kio would drop without a word while
// kubectl applies it and the render refuses it. Errors name the document.
func readDocuments(input []byte) ([]*yaml.RNode, error) {
	if err := yamlnode.CheckEncoding(input); err != nil {
		return nil, err
	}
	// What kubectl reads as JSON, confighash as YAML: it is all in the
	// first document.
	if err := yamlnode.CheckJSONPrefix(input); err != nil {
		return nil, fmt.Errorf("document 0: %w", err)
	}
	text := strings.ReplaceAll(string(input), "\r\n", "\n")
	// A chunk is parsed on its own; its lines are shifted by the lines
	// before it, so that errors name lines of the file.
	type chunk struct {
		text  string
		shift int
	}
	var chunks []chunk
	// prev is where the next chunk starts, linesBefore the lines before
	// it: counted as the input is walked, once (counting from the start
	// for each document made a render of thousands take minutes).
	prev, linesBefore := 0, 0
	for _, loc := range separator.FindAllStringIndex(text, -1) {
		if after := strings.TrimSpace(text[loc[0]+4 : loc[1]]); after != "" && after[0] != '#' {
			// The rest of the line is not shown: it may be a Secret's value.
			line := linesBefore + strings.Count(text[prev:loc[0]+1], "\n") + 1
			return nil, fmt.Errorf("document %d: line %d: text after the document marker \"---\": kubectl allows only a comment there; start the document on the next line", len(chunks), line)
		}
		chunks = append(chunks, chunk{text[prev:loc[0]] + "\n", linesBefore})
		linesBefore += strings.Count(text[prev:loc[1]], "\n")
		prev = loc[1]
	}
	chunks = append(chunks, chunk{text[prev:], linesBefore})
	var docs []*yaml.RNode
	for _, c := range chunks {
		dec := yaml.NewDecoder(strings.NewReader(c.text))
		var doc yaml.Node
		err := dec.Decode(&doc)
		switch {
		case errors.Is(err, io.EOF):
			continue
		case err != nil:
			return nil, fmt.Errorf("document %d: %w", len(docs), yamlnode.ShiftErrorLine(yamlnode.ParseError([]byte(c.text), err), c.shift))
		}
		if strings.Contains(c.text, "\r") {
			if err := yamlnode.LoneCRDocument([]byte(c.text)); err != nil {
				return nil, fmt.Errorf("document %d: %w", len(docs), yamlnode.ShiftErrorLine(err, c.shift))
			}
		}
		if err := nothingAfter(dec); err != nil {
			return nil, fmt.Errorf("document %d: %w", len(docs), err)
		}
		if yaml.IsYNodeEmptyDoc(&doc) {
			continue
		}
		if strings.ContainsAny(c.text, "\r\u0085\u2028\u2029") {
			yamlnode.EditorNodeLines(&doc, []byte(c.text))
		}
		yamlnode.ShiftLines(&doc, c.shift)
		docs = append(docs, yaml.NewRNode(&doc))
	}
	return docs, nil
}

// nothingAfter returns an error when dec holds another document that is
// not empty (a "---" that ends the input starts an empty one).
func nothingAfter(dec *yaml.Decoder) error {
	if _, more := yamlnode.AnotherDocument(dec); more {
		return errors.New(`another document follows this one without a "---" line between them: kubectl applies every object of a JSON stream, while Helm and kustomize read only the first; separate the documents with "---"`)
	}
	return nil
}

// resourceListItems checks a ResourceList as ReadObjects checks a stream
// and returns its items.
func resourceListItems(root *yaml.Node) ([]*yaml.RNode, error) {
	items := yamlnode.Child(root, "items")
	if items != nil && items.Kind == yaml.AliasNode && items.Alias != nil {
		items = items.Alias
	}
	var out []*yaml.RNode
	if items != nil && (items.Kind != yaml.ScalarNode || items.Tag != yaml.NodeTagNull) {
		if items.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("the ResourceList's items is not a list (found %s)", yamlnorm.Describe(items))
		}
		for i, it := range items.Content {
			if it.Kind == yaml.AliasNode && it.Alias != nil {
				it = it.Alias
			}
			if it.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("ResourceList items[%d] is not an object (found %s)", i, yamlnorm.Describe(it))
			}
			if _, err := yamlnorm.Normalise(it); err != nil {
				return nil, fmt.Errorf("ResourceList items[%d]: %w", i, err)
			}
			out = append(out, yaml.NewRNode(it))
		}
	}
	if _, err := yamlnorm.Normalise(root); err != nil {
		return nil, fmt.Errorf("the ResourceList: %w", err)
	}
	return out, nil
}

// addConfigs indexes a ConfigMap or Secret, or those among a v1 List's
// items, read as the analysis reads them (inject.ReadContent), which has
// already accepted them; a Secret encrypted with SOPS, whose content the
// analysis does not read (it is external to the render), is left out.
func (r *Render) addConfigs(n *yaml.RNode, listAPIVersion, listKind string, opts inject.Options) error {
	y := n.YNode()
	if y.Kind != yaml.MappingNode || opts.LeavesOut(n) {
		return nil
	}
	apiVersion, kind := inject.ItemType(listAPIVersion, listKind, yamlnode.Text(y, "apiVersion"), yamlnode.Text(y, "kind"))
	if apiVersion != "v1" {
		return nil
	}
	defaultNamespace := opts.DefaultNamespace
	switch kind {
	case "List", "ConfigMapList", "SecretList":
		items := yamlnode.Child(y, "items")
		if items == nil || items.Kind != yaml.SequenceNode {
			return nil
		}
		for i, it := range items.Content {
			if err := r.addConfigs(yaml.NewRNode(it), apiVersion, kind, opts); err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
		}
		return nil
	case string(hashing.KindConfigMap), string(hashing.KindSecret):
	default:
		return nil
	}
	if inject.EncryptedWithSOPS(y, hashing.Kind(kind)) {
		return nil
	}
	meta := yamlnode.Child(y, "metadata")
	ref := configRef{Kind: hashing.Kind(kind), Namespace: yamlnode.Text(meta, "namespace"), Name: yamlnode.Text(meta, "name")}
	if ref.Namespace == "" {
		ref.Namespace = defaultNamespace
	}
	c, err := inject.ReadContent(y, ref.Kind, ref.Namespace, ref.Name)
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	if ref.Name, err = inject.FinalName(n, ref.Name); err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	r.configs[ref] = c
	return nil
}
