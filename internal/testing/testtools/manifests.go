package testtools

import "strings"

// Documents splits a YAML stream at its "---" lines and returns the
// documents without the blank lines around them, leaving out empty ones.
func Documents(stream string) []string {
	var docs []string
	for _, d := range strings.Split("\n"+stream+"\n", "\n---\n") {
		if d = strings.Trim(d, "\n"); d != "" {
			docs = append(docs, d)
		}
	}
	return docs
}

// Items writes docs as the entries of a YAML block sequence, each line
// after indent: a document's first line after "- ", the others after two
// spaces, as a list's items are written.
func Items(indent string, docs ...string) string {
	var b strings.Builder
	for _, d := range docs {
		for i, line := range strings.Split(strings.Trim(d, "\n"), "\n") {
			if i == 0 {
				b.WriteString(indent + "- " + line + "\n")
			} else {
				b.WriteString(indent + "  " + line + "\n")
			}
		}
	}
	return b.String()
}

// ResourceList wraps the documents of stream as the items of a KRM
// ResourceList, with functionConfig (one YAML object) when it is not empty.
func ResourceList(stream, functionConfig string) string {
	rl := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + Items("", Documents(stream)...)
	if functionConfig != "" {
		rl += "functionConfig:\n  " + strings.ReplaceAll(strings.Trim(functionConfig, "\n"), "\n", "\n  ") + "\n"
	}
	return rl
}

// List writes objs as the items of one v1 List document.
func List(objs ...string) string {
	return "apiVersion: v1\nkind: List\nitems:\n" + Items("", objs...)
}

// TypedList writes objs as the items of a typed list of kind (a
// DeploymentList) in apiVersion, each item without its apiVersion and kind
// lines, as the API server lists them. Each of objs starts with those two
// lines.
func TypedList(apiVersion, kind string, objs ...string) string {
	items := make([]string, 0, len(objs))
	for _, o := range objs {
		lines := strings.SplitN(o, "\n", 3)
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "apiVersion: ") || !strings.HasPrefix(lines[1], "kind: ") {
			panic("TypedList: an item that does not start with its apiVersion and kind")
		}
		items = append(items, lines[2])
	}
	return "apiVersion: " + apiVersion + "\nkind: " + kind + "\nitems:\n" + Items("", items...)
}
