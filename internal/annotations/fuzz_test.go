package annotations_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/annotations"
)

// FuzzParseList holds the list parser to its rules on any value, as one
// written by hand may be: no entry is empty or has white space around it,
// and writing the set back as a list and reading it again gives the same set.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{"", "ConfigMap/a", " ConfigMap/a , ,Secret/b,", "a,a", "\t,\n", "ConfigMap/a\u00a0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set := annotations.ParseList(s)
		items := make([]string, 0, len(set))
		for item := range set {
			if item == "" || item != strings.TrimSpace(item) || strings.Contains(item, ",") {
				t.Fatalf("ParseList(%q) holds %q", s, item)
			}
			items = append(items, item)
		}
		slices.Sort(items)
		again := annotations.ParseList(strings.Join(items, ","))
		if len(again) != len(set) {
			t.Fatalf("ParseList(%q) = %v, read again %v", s, set, again)
		}
		for item := range set {
			if !again[item] {
				t.Fatalf("ParseList(%q) = %v, read again %v", s, set, again)
			}
		}
	})
}

// FuzzExternalRoundTrip: for any list of configs the API server accepts
// (names of every shape a DNS subdomain allows, either kind, repeated, in
// any order), the parser reads exactly the Kind/name set the formatter
// wrote. The fuzzer's text is cut at '|' into names and each is made a
// valid one, so that every input is a case.
func FuzzExternalRoundTrip(f *testing.F) {
	f.Add("a|b.c")
	f.Add("web-config|web-config")
	// Names of the shared corpus: kustomize-style suffixes, dots, digits.
	f.Add("argocd-cmd-params-cm|argocd-redis|argocd-secret")
	f.Add("grafana-dashboard-k8s-resources-cluster|grafana-datasources")
	f.Add("adapter-config|alertmanager-main-generated|app-7f8b9c2d4h")
	f.Add("kube-root-ca.crt|prometheus-k8s-tls-assets-0|0|a.b.c.d")
	f.Fuzz(func(t *testing.T, s string) {
		var uses []hashing.Use
		want := map[string]bool{}
		for i, part := range strings.Split(s, "|") {
			kind := hashing.KindConfigMap
			if i%2 == 1 {
				kind = hashing.KindSecret
			}
			u := hashing.Use{Kind: kind, Name: subdomain(part)}
			if errs := validation.IsDNS1123Subdomain(u.Name); len(errs) > 0 {
				t.Fatalf("subdomain(%q) = %q: %v", part, u.Name, errs)
			}
			uses = append(uses, u)
			want[u.Ref()] = true
		}
		list := annotations.FormatExternal(uses)
		if got := annotations.ParseExternal(list); !maps.Equal(got, want) {
			t.Fatalf("FormatExternal(%v) = %q, read back as %v", uses, list, got)
		}
	})
}

// subdomain makes s a DNS subdomain (RFC 1123) the API server accepts as a
// name: lower case, other characters as '-', each label starting and
// ending with a letter or digit, at most 253 characters.
func subdomain(s string) string {
	labels := strings.Split(strings.ToLower(s), ".")
	for i, l := range labels {
		b := []byte(l)
		for j, c := range b {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
				b[j] = '-'
			}
		}
		l = strings.Trim(string(b), "-")
		if len(l) > 63 {
			l = strings.TrimRight(l[:63], "-")
		}
		if l == "" {
			l = "x"
		}
		labels[i] = l
	}
	name := strings.Join(labels, ".")
	for len(name) > 253 {
		name = strings.TrimRight(name[:253], "-.")
	}
	return name
}

// FuzzCheckPrefix holds CheckPrefix to the API server's own rule: a prefix is
// accepted exactly when it is a DNS subdomain, and then every key made under
// it is a valid annotation key.
func FuzzCheckPrefix(f *testing.F) {
	for _, s := range []string{"confighash.dev", "", "a", "A.dev", "a..b", "-a", "a-", strings.Repeat("a", 254), "x.y/z", "ü.dev"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, prefix string) {
		err := annotations.CheckPrefix(prefix)
		problems := validation.IsDNS1123Subdomain(prefix)
		if (err == nil) != (len(problems) == 0) {
			t.Fatalf("CheckPrefix(%q) = %v, the API server's rule says %v", prefix, err, problems)
		}
		if err != nil {
			return
		}
		key := annotations.Key(prefix, annotations.Hash)
		if problems := validation.IsQualifiedName(key); len(problems) > 0 {
			t.Fatalf("Key(%q) = %q is not a valid annotation key: %v", prefix, key, problems)
		}
	})
}
