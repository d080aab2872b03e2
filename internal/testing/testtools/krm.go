package testtools

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// RunKRM wraps the objects of stream in a ResourceList whose ConfigHash
// functionConfig names namespace, runs the confighash binary on it as a KRM
// function, and returns its output ResourceList.
func RunKRM(t testing.TB, confighash, stream, namespace string) string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(stream))
	if err != nil {
		t.Fatalf("parsing the stream: %v", err)
	}
	fc := yaml.MustParse("apiVersion: confighash.dev/v1alpha1\nkind: ConfigHash\nmetadata:\n  name: confighash\nnamespace: " + namespace + "\n")
	var in bytes.Buffer
	w := kio.ByteWriter{Writer: &in, WrappingKind: kio.ResourceListKind, WrappingAPIVersion: kio.ResourceListAPIVersion, FunctionConfig: fc}
	if err := w.Write(nodes); err != nil {
		t.Fatal(err)
	}
	res := Run(t, "", nil, in.Bytes(), confighash)
	if res.ExitCode != 0 {
		t.Fatalf("confighash on a ResourceList: exit %d\n%s", res.ExitCode, res.Stderr)
	}
	return res.Stdout
}

// PodHashes returns the confighash.dev/hash annotation of every pod template
// (spec.template or a CronJob's) in a stream or ResourceList, keyed by
// Kind/namespace/name.
func PodHashes(t testing.TB, stream string) map[string]string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(stream))
	if err != nil {
		t.Fatalf("parsing: %v\n%s", err, stream)
	}
	return TemplateHashes(nodes)
}

// TemplateHashes is PodHashes of objects already parsed.
func TemplateHashes(nodes []*yaml.RNode) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		// The API server refuses changes of a Job's pod template: its hash
		// lives on the Job.
		if n.GetKind() == "Job" && strings.HasPrefix(n.GetApiVersion(), "batch/") {
			if h := n.GetAnnotations()["confighash.dev/hash"]; h != "" {
				out[n.GetKind()+"/"+n.GetNamespace()+"/"+n.GetName()] = h
			}
			continue
		}
		for _, path := range [][]string{{"spec", "template"}, {"spec", "jobTemplate", "spec", "template"}} {
			tpl, err := n.Pipe(yaml.Lookup(path...))
			if err == nil && tpl != nil && tpl.GetAnnotations()["confighash.dev/hash"] != "" {
				out[n.GetKind()+"/"+n.GetNamespace()+"/"+n.GetName()] = tpl.GetAnnotations()["confighash.dev/hash"]
			}
		}
	}
	return out
}

// Objects parses a YAML stream or a ResourceList into its objects, keyed by
// Kind/namespace/name, with the items of list documents (any kind ending in
// List) taken out, as kubectl and Helm apply them.
func Objects(t testing.TB, stream string) map[string]*yaml.RNode {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(stream))
	if err != nil {
		t.Fatalf("parsing the output: %v\n%s", err, stream)
	}
	objs := map[string]*yaml.RNode{}
	for _, n := range nodes {
		items := []*yaml.RNode{n}
		if strings.HasSuffix(n.GetKind(), "List") {
			list, err := n.Pipe(yaml.Lookup("items"))
			if err != nil {
				t.Fatal(err)
			}
			if items, err = list.Elements(); err != nil {
				t.Fatal(err)
			}
		}
		for _, o := range items {
			// An item of a typed list that names no kind is created, by
			// kubectl and Helm, as the list's kind without "List".
			if o.GetKind() == "" && o.GetApiVersion() == "" && n.GetKind() != "List" {
				o.SetKind(strings.TrimSuffix(n.GetKind(), "List"))
				o.SetApiVersion(n.GetApiVersion())
			}
			objs[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
		}
	}
	return objs
}
