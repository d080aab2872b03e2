package postrenderer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/yamlnode"
	"github.com/confighash/confighash/internal/yamlnorm"
)

// Process hashes a multi-document YAML stream. The output equals the input
// byte for byte but for the annotation lines confighash adds, changes or
// removes; a document laid out in a way it cannot edit in place (see
// rewrite) is re-encoded on its own. On error there is no output.
func Process(input []byte, opts inject.Options) ([]byte, *inject.Report, error) {
	out, report, err := process(input, opts)
	if err != nil {
		return nil, nil, err
	}
	return out.bytes(), report, nil
}

// output is a processed stream: the input with some documents replaced.
// Writing it from its pieces, rather than joining them first, spares a copy
// of the whole stream (and the fresh memory it would take) when the caller
// writes it out anyway, as the post-renderer command does.
type output struct {
	input  []byte
	chunks []document
	edits  map[int][]byte // by chunk index: the document's new text
}

// pieces returns the output as slices of the input and edited documents, in
// order: each run of unedited documents is one slice of the input.
func (o output) pieces() [][]byte {
	var ps [][]byte
	start := 0 // of the current run of unedited bytes
	for i, c := range o.chunks {
		text, edited := o.edits[i]
		if !edited {
			continue
		}
		if c.offset > start {
			ps = append(ps, o.input[start:c.offset])
		}
		ps = append(ps, text)
		start = c.offset + len(c.text)
	}
	if start < len(o.input) {
		ps = append(ps, o.input[start:])
	}
	return ps
}

// bytes returns the output as one new slice.
func (o output) bytes() []byte { return bytes.Join(o.pieces(), nil) }

// writeTo writes the output piece by piece.
func (o output) writeTo(w io.Writer) error {
	for _, p := range o.pieces() {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// process is Process without joining the output: the edits and the input
// they apply to.
func process(input []byte, opts inject.Options) (output, *inject.Report, error) {
	if err := yamlnode.CheckEncoding(input); err != nil {
		return output{}, nil, err
	}
	// What kubectl reads as JSON, confighash as YAML: it is all in the
	// first document.
	if err := yamlnode.CheckJSONPrefix(input); err != nil {
		return output{}, nil, fmt.Errorf("document 0: %w", err)
	}
	chunks := split(input)
	docs := make([]inject.Doc, 0, len(chunks))
	chunkOf := make([]int, 0, len(chunks)) // by document index
	var buf scanBuffers
	var toParse [][]byte // documents the config scanner did not read
	var parsedDoc []int
	texts := make([][]byte, len(chunks)) // what is read of each chunk
	var marks map[int]int                // by chunk: where a byte order mark was taken out
	var glued map[int]bool               // by chunk: a "---#c" line, read as "--- #c"
	fresh := true                        // kubectl's document buffer is empty at the chunk's first line
	lines := 0                           // of the input before the chunk: errors name lines of the input
	for i, c := range chunks {
		offset := lines
		lines += bytes.Count(c.text, []byte{'\n'})
		text := c.text
		chunkFresh := fresh
		// kubectl keeps a separator line that reaches an empty buffer
		// and drops one that ends a document.
		fresh = !chunkFresh && len(afterFirstLine(c.text)) == 0
		if gluedComment(text) {
			text = slices.Concat(text[:3], []byte(" "), text[3:])
			if glued == nil {
				glued = map[int]bool{}
			}
			glued[i] = true
		}
		if p := openingMark(text); p >= 0 {
			text = slices.Concat(text[:p], text[p+len(byteOrderMark):])
			if marks == nil {
				marks = map[int]int{}
			}
			marks[i] = p
		}
		texts[i] = text
		if !hasContent(text) {
			continue
		}
		if err := checkSeparators(c.text, len(chunkOf), chunkFresh); err != nil {
			return output{}, nil, yamlnode.ShiftErrorLine(err, offset)
		}
		if isNullDocument(text) {
			continue
		}
		index := len(chunkOf)
		chunkOf = append(chunkOf, i)
		// A document of a kind that cannot matter (a CRD, RBAC, a Service)
		// is copied unread when a line scan finds its kind; see readHeader
		// for what sends it to the parser instead.
		if h, ok := readHeader(text); ok && !opts.Relevant(h.apiVersion, h.kind) {
			continue
		}
		// A hook config Helm 4 does not create on every install and
		// upgrade is none of the release's configs (helm4SkipsHook).
		if helm4SkipsHook(text) {
			continue
		}
		d := inject.Doc{Index: index, Path: sourceComment(text), LineOffset: offset}
		read := text // as it will be installed; the output is edited from text
		if fromHelm4(text) {
			// Helm 4 wrote the text anew: it sends no "# Source:"
			// comment, and its lines are no user's.
			d.Unseen = true
			if d.Path == "" {
				d.Path = helm4Filename(text)
			}
			if installed, ok := helm4Installed(text); ok {
				read = installed
			}
		}
		d.Text = read
		// The config scanner reads a name, not kustomize's record of earlier
		// names: a renamed config is parsed, so references by its old name
		// resolve as they do in KRM mode.
		if isConfigKind(read) && !bytes.Contains(read, []byte(previousIDs)) {
			if content, ok := scanConfig(read, &buf); ok {
				d.Config = &content
			}
		}
		if d.Config == nil {
			toParse = append(toParse, read)
			parsedDoc = append(parsedDoc, len(docs))
		}
		docs = append(docs, d)
	}
	nodes, norms, errs := parseBatch(toParse)
	normOf := map[int]*yamlnorm.Result{}
	for j, n := range nodes {
		d := &docs[parsedDoc[j]]
		if errs[j] != nil {
			return output{}, nil, fmt.Errorf("%s: %w", where(*d), d.Lines(errs[j]))
		}
		d.Node = n
		normOf[d.Index] = norms[j]
	}
	report, err := inject.AnalyzeDocs(docs, opts)
	if err != nil {
		return output{}, nil, err
	}
	report.Documents = len(chunkOf)
	out := output{input: input, chunks: chunks, edits: map[int][]byte{}}
	names := annotationNames{
		hash:     opts.Annotation(inject.HashName),
		keyID:    opts.Annotation(inject.KeyIDName),
		external: opts.Annotation(inject.ExternalName),
	}
	// A List document holds several workloads: they are edited together.
	var order []int
	byDoc := map[int][]inject.Workload{}
	for _, w := range report.Workloads {
		if err := editable(normOf[w.Index], w, opts); err != nil {
			return output{}, nil, fmt.Errorf("%s: %w", w.Object, err)
		}
		if _, seen := byDoc[w.Index]; !seen {
			order = append(order, w.Index)
		}
		byDoc[w.Index] = append(byDoc[w.Index], w)
	}
	for _, d := range order {
		i := chunkOf[d]
		text, err := rewrite(texts[i], byDoc[d], opts, names)
		if err != nil {
			return output{}, nil, err
		}
		if !bytes.Equal(text, texts[i]) {
			if p, ok := marks[i]; ok && len(text) >= p && bytes.Equal(text[:p], texts[i][:p]) {
				text = slices.Concat(text[:p], []byte(byteOrderMark), text[p:])
			}
			if glued[i] && bytes.HasPrefix(text, []byte("--- #")) {
				text = slices.Concat(text[:3], text[4:])
			}
			out.edits[i] = text
		}
	}
	return out, report, nil
}

// checkSeparators refuses the "---" lines of a chunk that kubectl refuses:
// one with text after the marker other than a comment, and "---#c" (a
// comment right after the marker) where kubectl reads it as the first line
// of a document, which it does when its document buffer is empty (fresh
// says so: at the start of the stream, and after a separator that ended a
// document and nothing but another separator). Elsewhere kubectl and
// kustomize take "---#c" for a separator, and so does split. index is the
// chunk's document number.
func checkSeparators(text []byte, index int, fresh bool) error {
	if line := markerText(text); line > 0 {
		return fmt.Errorf("document %d: %w", index, yamlnode.AtLine(line, errors.New(`text after the document marker "---": kubectl and kustomize allow only a comment there; start the document on the next line`)))
	}
	if fresh && gluedComment(text) {
		return fmt.Errorf("document %d: %w", index, yamlnode.AtLine(1, errors.New(`kubectl reads "---#" here as the first line of the document, which is text to YAML; write "--- #"`)))
	}
	return nil
}

// afterFirstLine returns text without its first line.
func afterFirstLine(text []byte) []byte { return text[len(firstLine(text)):] }

// byteOrderMark is U+FEFF in UTF-8.
const byteOrderMark = "\ufeff"

// openingMark returns where a byte order mark opens a chunk's document: at
// its start, or at the start of the line after its "---" line; -1 if none
// does. Files saved with a mark and joined into one stream carry one there.
// kubectl, Helm and kyaml read each document on its own, where such a mark
// is not content; yaml.v3 reads one after the "---" line as part of the
// first key. The mark is taken out of what is read and put back into what is
// written.
func openingMark(text []byte) int {
	p := 0
	if isMarker(text, "---") {
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			return -1
		}
		p = i + 1
	}
	if bytes.HasPrefix(text[p:], []byte(byteOrderMark)) {
		return p
	}
	return -1
}

// previousIDs starts the annotations in which kustomize records an object's
// earlier names, kinds and namespaces.
const previousIDs = "internal.config.kubernetes.io/previous"

// annotationNames are the annotation keys rewrite writes, built once.
type annotationNames struct{ hash, keyID, external string }

// rewrite edits one document's workloads (one, or the items of a List) in
// place, or re-encodes the document when its layout cannot be edited in
// place.
//
// The editor handles block and flow (JSON) mappings, empty or null metadata
// and annotations, comments and CRLF line ends. What is left to reencode is
// what has no exact byte span to edit: an annotation to change or remove
// whose value is a block scalar, spans lines or carries a tag or anchor; a
// metadata or annotations node with an anchor (or an alias to one, which
// other objects share); a null written as nothing inside a flow mapping; a
// block mapping none of whose keys starts its line. An error names the
// workload.
func rewrite(text []byte, ws []inject.Workload, opts inject.Options, n annotationNames) ([]byte, error) {
	var e *editor
	inPlace := true
	for _, w := range ws {
		hashOn, externalOn := w.Holders(opts)
		if externalOn == nil {
			continue
		}
		if e == nil {
			// The parser's line numbers count a lone carriage return as a
			// line break, the editor's byte offsets do not: such a
			// document is written anew. One scan serves every workload.
			if yamlnode.HasLoneCR(text) {
				inPlace = false
				break
			}
			e = newEditor(text, ws[0].Node.YNode())
		}
		hash, keyID, external := kv{n.hash, w.Hash}, kv{n.keyID, w.KeyID(opts)}, kv{n.external, w.ExternalValue()}
		ok := false
		switch hashOn {
		case externalOn:
			ok = e.annotate(externalOn.YNode(), hash, keyID, external)
		case nil:
			// Opted out, with only an external list to clear.
			ok = e.annotate(externalOn.YNode(), external)
		default:
			ok = e.annotate(hashOn.YNode(), hash, keyID) && e.annotate(externalOn.YNode(), external)
		}
		if !ok {
			inPlace = false
			break
		}
	}
	switch {
	case e == nil && inPlace:
		return text, nil
	case inPlace:
		return e.apply(), nil
	}
	return reencode(text, ws, opts)
}

// reencode applies the annotations on the parsed nodes and writes the
// document anew, keeping its separator line.
func reencode(text []byte, ws []inject.Workload, opts inject.Options) ([]byte, error) {
	// A document parsed in a batch may have a comment attached elsewhere
	// than on its own (see parseBatch); writing it anew needs its own parse.
	root, err := parse(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ws[0].Object, err)
	}
	for _, w := range ws {
		if w, err = w.Rebind(root, opts); err != nil {
			return nil, err
		}
		if err := inject.Apply(w, opts); err != nil {
			return nil, fmt.Errorf("%s: %w", w.Object, err)
		}
	}
	var b bytes.Buffer
	if bytes.HasPrefix(text, []byte("---")) {
		b.WriteString("---\n")
	}
	// kyaml's encoder, as kio.ByteWriter writes a document, without what
	// the writer also does: drop an empty metadata.annotations and
	// kustomize's index annotations, which belong to the document here.
	enc := yaml.NewEncoder(&b)
	if err := enc.Encode(root.Document()); err != nil {
		return nil, fmt.Errorf("%s: %w", ws[0].Object, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("%s: %w", ws[0].Object, err)
	}
	if err := sameContent(root, b.Bytes()); err != nil {
		return nil, fmt.Errorf("%s: %w", ws[0].Object, err)
	}
	return b.Bytes(), nil
}

// sameContent checks that re-encoded text reads back as the node: the YAML
// encoder can turn an implicit null in flow style into ”, and confighash
// must never write a document that means something else. (The nodes are
// compared through yaml.v3's own decoding; kyaml's JSON conversion shows
// both as "".)
func sameContent(node *yaml.RNode, text []byte) error {
	back, err := parse(text)
	if err != nil {
		return fmt.Errorf("re-encoding the document: %w", err)
	}
	var want, got any
	err1 := node.YNode().Decode(&want)
	err2 := back.YNode().Decode(&got)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(want, got) {
		return fmt.Errorf("this document's layout (flow style) cannot be annotated without changing its meaning; write its metadata in block style")
	}
	return nil
}

// parse reads one document and normalises it (yamlnorm): what it returns
// reads as the API server will read the document.
func parse(text []byte) (*yaml.RNode, error) {
	n, err := parseRaw(text)
	if err != nil {
		return nil, err
	}
	if _, err := yamlnorm.Normalise(n.YNode()); err != nil {
		return nil, yamlnode.EditorLines(text, err)
	}
	return n, nil
}

// parseRaw reads one document as written. yaml.Unmarshal reads from the
// byte slice directly, which allocates far less than a Decoder over a
// reader; but it reads the first document and ignores what follows, so a
// flow (JSON) document, which ends at its closing bracket, goes through a
// Decoder that looks for more (decodeOne), and text after a "..." line is
// looked at for a document (afterEnd).
func parseRaw(text []byte) (*yaml.RNode, error) {
	var doc yaml.Node
	var err error
	if flowRoot(text) {
		err = decodeOne(text, &doc)
	} else {
		err = yaml.Unmarshal(text, &doc)
	}
	if err != nil {
		return nil, yamlnode.ParseError(text, err)
	}
	if line := afterEnd(text); line > 0 {
		return nil, yamlnode.AtLine(line, errAnotherDocument)
	}
	if err := yamlnode.LoneCRDocument(text); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("empty document")
	}
	return yaml.NewRNode(doc.Content[0]), nil
}

// errAnotherDocument is the error for a document that follows another
// without a "---" line: kubectl applies every object of a JSON stream
// (objects one after the other, no "---" between them), while Helm,
// kustomize and kubectl's YAML reader read only the first document of such
// a chunk and drop the rest without a word.
var errAnotherDocument = errors.New(`another document follows this one without a "---" line between them: kubectl applies every object of a JSON stream, while Helm and kustomize read only the first; separate the documents with "---"`)

// flowRoot reports whether a document's root is a flow (JSON) mapping or
// sequence, which ends at its closing bracket, before its chunk may.
func flowRoot(text []byte) bool {
	line := bytes.TrimSpace(firstContent(text))
	return len(line) > 0 && (line[0] == '{' || line[0] == '[')
}

// decodeOne reads the one document of text into doc, and refuses text that
// holds another after it.
func decodeOne(text []byte, doc *yaml.Node) error {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	if err := dec.Decode(doc); err != nil {
		return err
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return errAnotherDocument
	}
	return nil
}

// afterEnd returns the number (from 1) of the first line after a "..."
// line that holds a document: anything but blank lines, comments,
// directives ("%YAML", which belong to the document after the next "---")
// and more "..." lines. 0 if there is none.
func afterEnd(text []byte) int {
	if !bytes.HasPrefix(text, []byte("...")) && !bytes.Contains(text, []byte("\n...")) {
		return 0
	}
	ended := false
	for n, line := range bytes.Split(text, []byte("\n")) {
		t := bytes.TrimSpace(line)
		switch {
		case isMarker(line, "..."):
			ended = true
		case !ended || len(t) == 0 || t[0] == '#' || line[0] == '%':
		default:
			return n + 1
		}
	}
	return 0
}

// isConfigKind is a cheap first look: could this be a ConfigMap or Secret?
func isConfigKind(text []byte) bool {
	return bytes.Contains(text, []byte("\nkind: ConfigMap")) || bytes.Contains(text, []byte("\nkind: Secret")) ||
		bytes.HasPrefix(text, []byte("kind: "))
}

// sourceComment returns the template path of Helm's "# Source: path" line
// among the first lines of a document.
func sourceComment(text []byte) string {
	for n := 0; n < 8 && len(text) > 0; n++ {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		if p, ok := bytes.CutPrefix(line, []byte("# Source: ")); ok {
			return string(bytes.TrimSpace(p))
		}
	}
	return ""
}

func where(d inject.Doc) string {
	if d.Path != "" {
		return fmt.Sprintf("document %d, %s", d.Index, d.Path)
	}
	return fmt.Sprintf("document %d", d.Index)
}
