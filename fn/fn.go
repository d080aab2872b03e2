package fn

import (
	"bytes"
	stderrors "errors"
	"fmt"
	"io"

	"sigs.k8s.io/kustomize/kyaml/errors"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/yamlnode"
)

// Processor is the KRM function. Base holds options from the command line; a
// functionConfig overrides them field by field. It does the work of a kyaml
// framework processor in types of its own, so that a binary linking it does
// not link kyaml's framework and the OpenAPI validation (and its regexps,
// compiled at start-up) that comes with it.
type Processor struct {
	Base inject.Options
}

// Process loads the functionConfig, runs the filter and adds its findings to
// the results.
func (p Processor) Process(rl *ResourceList) error {
	opts, err := LoadConfig(rl.FunctionConfig)
	if err != nil {
		return err
	}
	opts = merge(p.Base, opts)
	// kustomize drops local-config objects from its output and kpt does not
	// apply them: no cluster holds them.
	opts.SkipLocalConfig = true
	var report inject.Report
	if rl.Items, err = (inject.Filter{Options: opts, Report: &report}).Filter(rl.Items); err != nil {
		// As framework.ResourceList.Filter does: the message is the filter's.
		return errors.Wrap(err)
	}
	for _, f := range report.Findings {
		rl.Results = append(rl.Results, result(f))
	}
	if r := asGenerator(rl); r != nil {
		rl.Results = append(rl.Results, r)
	}
	return nil
}

// asGenerator is a warning when the only item is the functionConfig itself,
// marked local-config: that is how kustomize runs a function listed under
// generators:, which gets no resources and so hashes nothing.
func asGenerator(rl *ResourceList) *Result {
	if len(rl.Items) != 1 || rl.FunctionConfig == nil || rl.FunctionConfig.YNode().Kind != yaml.MappingNode {
		return nil
	}
	item, fc := rl.Items[0], rl.FunctionConfig
	if !inject.IsLocalConfig(item) ||
		item.GetApiVersion() != fc.GetApiVersion() || item.GetKind() != fc.GetKind() || item.GetName() != fc.GetName() {
		return nil
	}
	return &Result{
		Severity: Warning,
		Message: "received no resources, only its own functionConfig: kustomize runs a function listed under generators: on nothing, " +
			"so no workload was hashed; list it under transformers: instead",
		ResourceRef: &yaml.ResourceIdentifier{
			TypeMeta: yaml.TypeMeta{APIVersion: fc.GetApiVersion(), Kind: fc.GetKind()},
			NameMeta: yaml.NameMeta{Name: fc.GetName()},
		},
	}
}

// Run executes the function on a ResourceList read from in, its items read
// as kubectl and the API server would read them (checkResourceList). The output
// ResourceList goes to out only when the function succeeds; otherwise the
// error is returned and nothing is written. It does framework.Execute's IO
// without its internal-annotation reconciliation, which this function never
// needs (it changes no path or index annotation) and which costs more than
// the hashing on large inputs.
func Run(p Processor, in io.Reader, out io.Writer) (Results, error) {
	input, err := io.ReadAll(in)
	if err != nil {
		return nil, fmt.Errorf("reading the ResourceList: %w", err)
	}
	return RunBytes(p, input, out)
}

// RunBytes is Run on a ResourceList already read, for a caller that has the
// bytes in hand (bin/confighash reads standard input before it knows which
// mode it is in).
func RunBytes(p Processor, input []byte, out io.Writer) (Results, error) {
	var buf bytes.Buffer
	rw, items, err := readResourceList(input, &buf)
	if err != nil {
		return nil, err
	}
	if err := checkItems(items); err != nil {
		return nil, err
	}
	rl := &ResourceList{Items: items, FunctionConfig: rw.FunctionConfig}
	if err := p.Process(rl); err != nil {
		// kustomize and kpt mark each item with its index: the input is
		// theirs, written anew, and its lines are in no file of the user's.
		if bytes.Contains(input, []byte("config.kubernetes.io/index:")) {
			return rl.Results, yamlnode.WithoutNodeLines(err)
		}
		// The items' lines are those yaml.v3 counts in input.
		return rl.Results, yamlnode.EditorLines(input, err)
	}
	if rl.Results.ExitCode() != 0 {
		return rl.Results, fmt.Errorf("%s", rl.Results.Error())
	}
	if len(rl.Results) > 0 {
		if rw.Results, err = resultsNode(rl.Results); err != nil {
			return rl.Results, err
		}
	}
	if err := rw.Write(rl.Items); err != nil {
		return rl.Results, fmt.Errorf("writing the ResourceList: %w", err)
	}
	_, err = out.Write(buf.Bytes())
	return rl.Results, err
}

// checkItems checks the metadata of every item, whatever its kind (the
// filter checks only those it reads): kio annotates every item it writes
// back, and fails, drops the metadata or panics where metadata is not a map.
func checkItems(items []*yaml.RNode) error {
	for i, it := range items {
		if err := inject.CheckMetadata(it); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
	}
	return nil
}

// readResourceList checks input (checkResourceList) and returns
// its items, with a ByteReadWriter set up to write the output ResourceList to
// w. The items are those kyaml's kio.ByteReadWriter would read, with the
// lines yaml.v3 counts in input.
//
// The check parses the ResourceList into a tree. Where that tree is what kio
// would read (one document with nothing to expand, which is the usual case),
// the items are taken from it, and the input is parsed once; otherwise kio
// reads the text (the expanded text, when the check expanded anything), a
// second parse.
func readResourceList(input []byte, w io.Writer) (*kio.ByteReadWriter, []*yaml.RNode, error) {
	// kio reads the text with CRLF line ends made LF and cuts it at "---"
	// lines: text without a CR or such a line is one tree as it stands. An
	// error, or anything to expand, is left to the two reads, whose errors
	// are the ones to give.
	if bytes.IndexByte(input, '\r') >= 0 || bytes.HasPrefix(input, []byte("---")) || bytes.Contains(input, []byte("\n---")) {
		return readResourceListTwice(input, w)
	}
	root, changed, err := checkResourceList(input)
	if err != nil {
		return nil, nil, err
	}
	if changed {
		return readChecked(input, root, true, w)
	}
	node := yaml.NewRNode(root)
	meta, err := node.GetMeta()
	items, fc := node.Field("items"), node.Field("functionConfig")
	// kio annotates the ResourceList it reads, which fails on some metadata
	// and is of no use here: a ResourceList with metadata, or one kio would
	// not unwrap, is left to kio.
	if (err != nil && !stderrors.Is(err, yaml.ErrMissingMetadata)) || node.Field("metadata") != nil ||
		(meta.Kind != kio.ResourceListKind && meta.Kind != "List") || (items == nil && fc == nil) {
		return readChecked(input, root, false, w)
	}
	rw := &kio.ByteReadWriter{Writer: w, KeepReaderAnnotations: true, PreserveSeqIndent: true,
		WrappingKind: meta.Kind, WrappingAPIVersion: meta.APIVersion}
	if fc != nil {
		rw.FunctionConfig = fc.Value
	}
	if res := node.Field("results"); res != nil {
		rw.Results = res.Value
	}
	var out []*yaml.RNode
	if items != nil {
		for _, it := range items.Value.Content() {
			out = append(out, yaml.NewRNode(it))
		}
	}
	return rw, out, nil
}

// readResourceListTwice checks input (checkResourceList) and reads it, or
// the expanded text, with kio.
func readResourceListTwice(input []byte, w io.Writer) (*kio.ByteReadWriter, []*yaml.RNode, error) {
	root, changed, err := checkResourceList(input)
	if err != nil {
		return nil, nil, err
	}
	return readChecked(input, root, changed, w)
}

// readChecked reads the ResourceList the check parsed into root with kio:
// the expanded text when the check changed anything, input otherwise. kio
// cuts the text at its "---" lines and unwraps the items, which leaves
// their lines its own: they are made those of root, the lines yaml.v3
// counts in input.
func readChecked(input []byte, root *yaml.Node, changed bool, w io.Writer) (*kio.ByteReadWriter, []*yaml.RNode, error) {
	var rw *kio.ByteReadWriter
	var items []*yaml.RNode
	var err error
	if changed {
		rw, items, err = readExpanded(root, w)
	} else {
		rw, items, err = readWithKio(input, w)
	}
	if err != nil {
		return nil, nil, err
	}
	if checked := yamlnode.Child(root, "items"); checked != nil && len(checked.Content) == len(items) {
		for i, it := range items {
			yamlnode.CopyLines(it.YNode(), checked.Content[i])
		}
	}
	return rw, items, nil
}

// readExpanded writes the ResourceList the check expanded anew and reads
// that text with kio.
func readExpanded(root *yaml.Node, w io.Writer) (*kio.ByteReadWriter, []*yaml.RNode, error) {
	text, err := yaml.NewRNode(root).String()
	if err != nil {
		return nil, nil, fmt.Errorf("writing the expanded ResourceList: %w", err)
	}
	return readWithKio([]byte(text), w)
}

// readWithKio reads a checked ResourceList with kio.
func readWithKio(input []byte, w io.Writer) (*kio.ByteReadWriter, []*yaml.RNode, error) {
	rw := &kio.ByteReadWriter{Reader: bytes.NewReader(input), Writer: w, KeepReaderAnnotations: true, PreserveSeqIndent: true}
	items, err := rw.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the ResourceList: %w", err)
	}
	return rw, items, nil
}

func resultsNode(results Results) (*yaml.RNode, error) {
	b, err := yaml.Marshal(results)
	if err != nil {
		return nil, err
	}
	return yaml.Parse(string(b))
}

func merge(base, over inject.Options) inject.Options {
	if over.Prefix != "" {
		base.Prefix = over.Prefix
	}
	if over.DefaultNamespace != "" {
		base.DefaultNamespace = over.DefaultNamespace
	}
	base.Workloads = append(append([]inject.WorkloadKind(nil), over.Workloads...), base.Workloads...)
	return base
}

func result(f inject.Finding) *Result {
	r := &Result{
		Message:  f.Message,
		Severity: severity(f.Severity),
		ResourceRef: &yaml.ResourceIdentifier{
			TypeMeta: yaml.TypeMeta{APIVersion: f.Object.APIVersion, Kind: f.Object.Kind},
			NameMeta: yaml.NameMeta{Name: f.Object.Name, Namespace: f.Object.Namespace},
		},
	}
	if f.Object.Path != "" {
		r.File = &File{Path: f.Object.Path, Index: f.Object.Index}
	}
	return r
}

// severity is the KRM result severity of a finding's.
func severity(s inject.Severity) Severity {
	switch s {
	case inject.SeverityError:
		return Error
	case inject.SeverityWarning:
		return Warning
	}
	return Info
}
