package annotations_test

import (
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

// FuzzExternalRoundTrip: for names the API server accepts, the parser reads
// exactly the Kind/name set the formatter wrote.
func FuzzExternalRoundTrip(f *testing.F) {
	f.Add("a", "b.c")
	f.Add("web-config", "web-config")
	// Names of the shared corpus: kustomize-style suffixes, dots, digits.
	f.Add("argocd-cmd-params-cm", "argocd-redis")
	f.Add("grafana-dashboard-k8s-resources-cluster", "grafana-datasources")
	f.Add("adapter-config", "alertmanager-main-generated")
	f.Add("kube-root-ca.crt", "prometheus-k8s-tls-assets-0")
	f.Fuzz(func(t *testing.T, cm, secret string) {
		if len(validation.IsDNS1123Subdomain(cm)) > 0 || len(validation.IsDNS1123Subdomain(secret)) > 0 {
			return
		}
		uses := []hashing.Use{{Kind: hashing.KindConfigMap, Name: cm}, {Kind: hashing.KindSecret, Name: secret}}
		got := annotations.ParseExternal(annotations.FormatExternal(uses))
		want := map[string]bool{uses[0].Ref(): true, uses[1].Ref(): true}
		if len(got) != len(want) || !got[uses[0].Ref()] || !got[uses[1].Ref()] {
			t.Fatalf("round trip of %v: %v", uses, got)
		}
	})
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
