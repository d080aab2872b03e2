package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/annotations"
	"github.com/confighash/confighash/internal/hmackey"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/output"
	"github.com/confighash/confighash/internal/rolldiff"
	"github.com/confighash/confighash/postrenderer"
)

// analyze reads a stream or a ResourceList's items and reports on them
// without writing anything.
func analyze(o options, input []byte) (*inject.Report, error) {
	if isResourceList(input) {
		nodes, opts, err := rolldiff.ReadObjects(input, o.Options)
		if err != nil {
			return nil, err
		}
		return inject.Analyze(nodes, opts)
	}
	_, report, err := postrenderer.Process(input, o.Options)
	return report, err
}

// explained is one workload in `explain --json` output.
type explained struct {
	Workload string `json:"workload"`
	Document int    `json:"document"`
	Path     string `json:"path,omitempty"`
	Hash     string `json:"hash,omitempty"`
	Current  string `json:"current,omitempty"`
	// KeyMismatch says, when Current is not Hash, that it was made in
	// another HMAC mode than explain's (hashing.MismatchKeyed, …), as
	// kubectl confighash status --json says it: a hash explain cannot
	// check, not a stale one. RenderKeyID is the render's key id, for
	// hashing.MismatchOtherKey.
	KeyMismatch hashing.Mismatch  `json:"keyMismatch,omitempty"`
	RenderKeyID string            `json:"renderKeyID,omitempty"`
	OptedOut    bool              `json:"optedOut,omitempty"`
	Consumes    []output.Consumed `json:"consumes"`
	// NotString lists the confighash annotations present whose value YAML
	// does not read as a string (an unquoted 9178192511668845 is a
	// number): kubectl and Helm refuse the object.
	NotString []notString `json:"notString,omitempty"`
	// keyID is the key id annotation next to the hash, when it is a string.
	keyID string
	// controllerHash is the controller's record on the pod template
	// (controllerKey): only live state (kubectl get) has one, which no
	// render writes.
	controllerHash, controllerKey string
	// external is the external list found on the workload, when it is a
	// string; wantExternal the one the render writes, which it writes only
	// on a workload with a pod template (writesExternal).
	external, wantExternal string
	writesExternal         bool
	// helmHook is true for a Helm hook (helm.sh/hook), which Helm 3 does
	// not send its post-renderer.
	helmHook bool
	// onTemplate is true when a workload whose hash goes on the workload
	// itself (a Job) has none there but has one on its pod template, where
	// an earlier confighash wrote it.
	onTemplate bool
	// carries are the annotations confighash writes that a workload that
	// opts out still has (an earlier run wrote them, before the opt-out):
	// a render with confighash takes them off (inject.Workload.Holders).
	carries []string
}

type notString struct {
	Annotation string `json:"annotation"`
	Text       string `json:"text"`
}

func explainAll(o options, r *inject.Report) []explained {
	out := make([]explained, 0, len(r.Workloads))
	for _, w := range r.Workloads {
		e := explained{
			Workload: output.WorkloadID(w.Kind, w.Namespace, w.Name),
			Document: w.Index, Path: w.Path, Hash: w.Hash, OptedOut: w.OptedOut, Consumes: []output.Consumed{},
			wantExternal: w.ExternalValue(), writesExternal: !w.OptedOut && w.Template != nil,
		}
		if w.Node != nil {
			e.helmHook = w.Node.GetAnnotations()[annotations.HelmHook] != ""
		}
		// Annotations are read as YAML reads them, not as raw text.
		type holder struct {
			node *yaml.Node
			name string
		}
		var on []holder
		if hashOn, _ := w.Holders(o.Options); hashOn != nil {
			on = append(on, holder{hashOn.YNode(), inject.HashName}, holder{hashOn.YNode(), inject.KeyIDName})
		}
		if w.Template != nil && w.TemplateImmutable() {
			_, e.onTemplate = inject.Annotation(w.Template.YNode(), o.Annotation(inject.HashName))
		}
		e.controllerKey = o.Annotation(annotations.ControllerHash)
		if w.Template != nil {
			e.controllerHash, _ = inject.Annotation(w.Template.YNode(), e.controllerKey)
		}
		if w.Node != nil {
			on = append(on, holder{w.Node.YNode(), inject.ExternalName})
		}
		for _, a := range on {
			key := o.Annotation(a.name)
			value, present, isString := annotations.Value(a.node, key)
			if present && w.OptedOut {
				e.carries = append(e.carries, key)
			}
			switch {
			case present && !isString:
				e.NotString = append(e.NotString, notString{Annotation: key, Text: value})
			case a.name == inject.HashName:
				e.Current = value
			case a.name == inject.KeyIDName:
				e.keyID = value
			case a.name == inject.ExternalName:
				e.external = value
			}
		}
		for _, group := range []struct {
			uses     []hashing.Use
			external bool
		}{{w.InStream, false}, {w.External, true}} {
			for _, u := range group.uses {
				e.Consumes = append(e.Consumes, output.ConsumedOf(u, group.external))
			}
		}
		if !e.OptedOut && e.Current != "" && e.Current != e.Hash {
			e.KeyMismatch = keyMismatch(e, o.Key)
			if e.KeyMismatch == hashing.MismatchOtherKey {
				e.RenderKeyID = e.keyID
			}
		}
		out = append(out, e)
	}
	return out
}

func runExplain(args []string, stdio IO) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	o, r, _, _, err := subcommand(fs, args, stdio)
	if err != nil {
		return err
	}
	list := explainAll(o, r)
	if *asJSON {
		enc := json.NewEncoder(stdio.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	printExplained(stdio.Out, r, list, o.Key)
	return nil
}

func printExplained(w io.Writer, r *inject.Report, list []explained, key []byte) {
	configs := fmt.Sprintf("%d %s", r.Configs, output.Plural(r.Configs, "ConfigMap or Secret", "ConfigMaps and Secrets"))
	fmt.Fprintf(w, "%s, %s, %s\n", count(r.Documents, "document"), configs, count(len(list), "workload"))
	for _, e := range list {
		fmt.Fprintf(w, "\n%s  (document %d%s)\n", e.Workload, e.Document, pathSuffix(e.Path))
		switch {
		case e.OptedOut:
			fmt.Fprint(w, "  opted out (enabled: \"false\")")
			if len(e.carries) > 0 {
				fmt.Fprintf(w, ", but carries %s, which confighash removes from a workload that opts out: render again with confighash after the opt-out", listed(e.carries))
			}
			fmt.Fprintln(w)
			continue
		case e.Hash == "":
			fmt.Fprintln(w, "  hash: none (consumes nothing from this stream)")
		default:
			fmt.Fprintf(w, "  hash: %s%s\n", e.Hash, staleness(e, key))
		}
		for _, n := range e.NotString {
			fmt.Fprintf(w, "  %s: %s is not a string in YAML (unquoted, it reads as a number or bool): kubectl and helm refuse the object\n", n.Annotation, n.Text)
		}
		// The keys last: a long list pads no other cell.
		tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
		for _, c := range e.Consumes {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Kind, c.Name, where(c), what(c))
		}
		_ = tw.Flush()
	}
}

// controllerRolled reports whether the workload's render-time hash is older
// than the controller's record next to it, which is current: live state
// after the controller rolled the workload, as it does when a config
// changes in the cluster.
func (e explained) controllerRolled() bool {
	return e.Current != e.Hash && e.Hash != "" && e.controllerHash == e.Hash
}

// listed writes "a", "a and b", "a, b and c".
func listed(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

func pathSuffix(p string) string {
	if p == "" {
		return ""
	}
	return ", " + p
}

func staleness(e explained, key []byte) string {
	switch e.Current {
	case e.Hash:
		return "  (present)"
	case "":
		switch {
		case e.onTemplate:
			return "  (missing from the Job, whose pod template has one, where an earlier confighash wrote it: render again)"
		case e.helmHook:
			return "  (missing from the input: a Helm hook, which Helm 3's --post-renderer never sees)"
		case e.external != "":
			return "  (missing from the input, which holds the external list the function wrote: the configs were not in the stream under these names when it ran)"
		}
		return "  (missing from the input)"
	}
	switch keyMismatch(e, key) {
	case hashing.MismatchKeyed:
		return "  (the input has " + e.Current + ", made with an HMAC key explain was not given: pass --hmac-key-file)"
	case hashing.MismatchUnkeyed:
		return "  (the input has " + e.Current + ", made without an HMAC key)"
	case hashing.MismatchOtherKey:
		return "  (the input has " + e.Current + ", made with another HMAC key, key-id " + e.keyID + ")"
	}
	if e.controllerRolled() {
		return "  (the input has " + e.Current + ", older than the controller's current " + e.controllerKey + ": the controller rolled it after its configs changed in the cluster)"
	}
	return "  (the input has a stale " + e.Current + ")"
}

func what(c output.Consumed) string {
	if c.Whole {
		return "all keys"
	}
	return "keys " + strings.Join(c.Keys, ",")
}

func where(c output.Consumed) string {
	s := "in stream"
	if c.External {
		s = "EXTERNAL"
	}
	if c.Optional {
		s += ", optional"
	}
	return s
}

// runVerify exits non-zero when a workload consuming in-stream configs lacks
// its current hash: the CI guard for pipelines that may skip the function.
func runVerify(args []string, stdio IO) error {
	o, r, input, name, err := subcommand(flag.NewFlagSet("verify", flag.ContinueOnError), args, stdio)
	if err != nil {
		return err
	}
	if r.Documents == 0 {
		// What a failed render leaves a pipeline: nothing to pass.
		return fmt.Errorf("no objects in %s, so nothing to verify: did the render fail? (in a shell pipeline, set -o pipefail)", inputName(name))
	}
	unchecked, err := uncheckedHashes(input, annotations.Key(o.Prefix, annotations.Hash), r)
	if err != nil {
		return fmt.Errorf("reading the input: %w", err)
	}
	var bad []string
	for _, u := range unchecked {
		bad = append(bad, "  "+u)
	}
	missing, hooks, joined, stale, orphan, unquoted, onTemplate, optedOut, rolled := 0, 0, 0, 0, 0, 0, 0, 0, 0
	noExternal, otherExternal := 0, 0
	keyed, unkeyed := 0, 0
	otherKeys := map[string]int{}
	for _, e := range explainAll(o, r) {
		for _, n := range e.NotString {
			bad = append(bad, fmt.Sprintf("  %s (document %d%s): %s is %s, not a string", e.Workload, e.Document, pathSuffix(e.Path), n.Annotation, n.Text))
			unquoted++
		}
		if len(e.carries) > 0 {
			bad = append(bad, fmt.Sprintf("  %s (document %d%s): opted out, but carries %s", e.Workload, e.Document, pathSuffix(e.Path), listed(e.carries)))
			optedOut++
		}
		if e.writesExternal && !sameExternal(e.external, e.wantExternal) {
			bad = append(bad, fmt.Sprintf("  %s (document %d%s): %s: want %q, found %q", e.Workload, e.Document, pathSuffix(e.Path), o.Annotation(inject.ExternalName), e.wantExternal, e.external))
			if e.external == "" {
				noExternal++
			} else {
				otherExternal++
			}
		}
		if !e.OptedOut && e.Current != e.Hash {
			bad = append(bad, fmt.Sprintf("  %s (document %d%s): want %q, found %q", e.Workload, e.Document, pathSuffix(e.Path), e.Hash, e.Current))
			switch {
			case e.Current == "" && e.onTemplate:
				onTemplate++
			case e.Current == "" && e.helmHook:
				hooks++
			case e.Current == "" && e.external != "":
				// The function ran: it wrote the external list.
				joined++
			case e.Current == "":
				missing++
			case e.Hash == "":
				orphan++
			default:
				switch keyMismatch(e, o.Key) {
				case hashing.MismatchKeyed:
					keyed++
				case hashing.MismatchUnkeyed:
					unkeyed++
				case hashing.MismatchOtherKey:
					otherKeys[e.keyID]++
				default:
					if e.controllerRolled() {
						rolled++
					} else {
						stale++
					}
				}
			}
		}
	}
	if len(bad) > 0 {
		var hints []string
		if missing > 0 {
			hints = append(hints, fmt.Sprintf("%d without one: did the function run? kustomize needs --enable-alpha-plugins --enable-exec", missing))
		}
		if joined > 0 {
			hints = append(hints, fmt.Sprintf("%d without one, though the render wrote its external list: the configs it reads were not in the stream under these names when the function ran (kustomize substitutes vars: after its transformers, so use replacements:; or a kustomization above the one that lists confighash, or the one that uses a component listing it, renamed them: list confighash under the transformers: of the outermost kustomization)", joined))
		}
		if onTemplate > 0 {
			hints = append(hints, fmt.Sprintf("%d on a Job's pod template, where an earlier confighash wrote it: the API server refuses any change of a Job's pod template, so confighash now writes a Job's hash on the Job itself; render again", onTemplate))
		}
		if optedOut > 0 {
			hints = append(hints, fmt.Sprintf("%d opted out (%s: \"false\") but carrying what confighash writes, which it removes from a workload that opts out: "+
				"confighash ran before the opt-out (a kustomize base, an earlier render stage) and not after it, so the pods still roll when the configs of that run change; "+
				"list confighash where the workload opts out too (in the outermost kustomization)", optedOut, o.Annotation(inject.EnabledName)))
		}
		if hooks > 0 {
			hints = append(hints, fmt.Sprintf("%d without one on a Helm hook: Helm 3's --post-renderer never sees hooks, which helm template prints as rendered, so verify what `helm template … | confighash` writes, which hashes them (else the function did not run)", hooks))
		}
		if keyed > 0 {
			hints = append(hints, fmt.Sprintf("%d made with an HMAC key verify was not given: pass it with --hmac-key-file (or $%s, $%s)", keyed, hmackey.EnvFile, hmackey.EnvKey))
		}
		if unkeyed > 0 {
			hints = append(hints, fmt.Sprintf("%d made without an HMAC key, and verify was given one", unkeyed))
		}
		for _, id := range slices.Sorted(maps.Keys(otherKeys)) {
			hints = append(hints, fmt.Sprintf("%d made with another HMAC key (key-id %s; verify's is %s)", otherKeys[id], id, hashing.KeyID(o.Key)))
		}
		if rolled > 0 {
			hints = append(hints, fmt.Sprintf("%d whose %s is current: the controller rolled %s after %s configs changed in the cluster, so this is live state (kubectl get), which no render is: `kubectl confighash status` checks it",
				rolled, o.Annotation(annotations.ControllerHash), output.Plural(rolled, "it", "them"), output.Plural(rolled, "its", "their")))
		}
		if stale > 0 {
			hints = append(hints, fmt.Sprintf("%d with another value: the configs changed after the render (a kustomization above the one that lists confighash, or the one that uses a component listing it, renamed or edited them, say: list confighash under the transformers: of the outermost kustomization), or kustomize left a reference of a Rollout, DeploymentConfig, ReplicationController or CRD under its old name (a nameReference configuration lacking the field), or it used another --namespace or HMAC key", stale))
		}
		if orphan > 0 {
			hints = append(hints, fmt.Sprintf("%d on a workload that reads no config of the stream: names changed after the function ran (run confighash last, in the outermost kustomization that renames; kustomize fixes the references of other kinds only with a nameReference configuration), or the configs left the stream", orphan))
		}
		if noExternal > 0 {
			hints = append(hints, fmt.Sprintf("%d without the %s list the render writes: the controller manages a workload that consumes configs from outside the stream by it, so render the stream with confighash", noExternal, o.Annotation(inject.ExternalName)))
		}
		if otherExternal > 0 {
			hints = append(hints, fmt.Sprintf("%d with another external list than the render writes: configs joined or left the stream after the render, or their names changed (a kustomization above the one that lists confighash, or the one that uses a component listing it, say)", otherExternal))
		}
		if len(unchecked) > 0 {
			hints = append(hints, fmt.Sprintf("%d on a kind verify does not read: pass the functionConfig's workloads as --workload Kind.group=path", len(unchecked)))
		}
		if unquoted > 0 {
			hints = append(hints, fmt.Sprintf("%s YAML reads as a number or bool, not a string: kubectl and helm refuse %s; render again (confighash quotes them)", count(unquoted, "annotation"), output.Plural(unquoted, "it", "them")))
		}
		return fmt.Errorf("%s with the %s annotations (%s):\n%s",
			count(len(bad), "problem"), o.Prefix, strings.Join(hints, "; "), strings.Join(bad, "\n"))
	}
	fmt.Fprintf(stdio.Out, "ok: %s, every hash current\n", count(len(r.Workloads), "workload"))
	return nil
}

// sameExternal reports whether two external lists name the same configs,
// read as the controller reads them: a set, white space around entries and
// empty entries ignored.
func sameExternal(found, want string) bool {
	return maps.Equal(annotations.ParseExternal(found), annotations.ParseExternal(want))
}

// keyMismatch tells whether a hash that differs from the computed one was
// made in another mode than verify's, as diff tells it, or "" when that is
// not the cause: the configs changed, or the render used another
// --namespace, or the hash is no value of this version.
func keyMismatch(e explained, key []byte) hashing.Mismatch {
	if m := hashing.CompareMode(e.Current, e.keyID, hashing.KeyID(key)); m != hashing.MismatchUnknown {
		return m
	}
	return ""
}

// subcommand parses the shared flags, reads standard input and analyses it.
// It reads the file named on the command line, or standard input when
// none or "-" is, and names the file in errors.
func subcommand(fs *flag.FlagSet, args []string, stdio IO) (options, *inject.Report, []byte, string, error) {
	o, files, err := parseFlagSet(fs, args, 1, stdio)
	if err != nil {
		return o, nil, nil, "", err
	}
	name := "-"
	if len(files) == 1 {
		name = files[0]
	}
	input, err := readInput(fs.Name(), name, stdio.In)
	if err != nil {
		return o, nil, nil, name, err
	}
	r, err := analyze(o, input)
	if err != nil && name != "-" {
		err = fmt.Errorf("%s: %w", name, err)
	}
	return o, r, input, name, err
}

// inputName names an input in messages.
func inputName(name string) string {
	if name == "-" {
		return "standard input"
	}
	return name
}

// count writes n and noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
