package cli_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/confighash/confighash/internal/cli"
	"github.com/confighash/confighash/internal/hmackey"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// leakPeriod repeats through every Secret value of the leak tests, so that
// any 8 bytes of a value, written out, in base64 or in hex, are
// recognisable wherever a message quotes them.
const leakPeriod = "CANARY-s3cr3t-"

// leakCorruption is a Secret document with the secret value exactly where
// a parser or check fails or warns. In its template "$V" stands for the
// value as written and "$B" for its base64; a template that starts with
// "{" is the whole document, "$K" its kind, one that starts with "--- " the
// whole document on its marker line after the Deployment, otherwise it
// follows the Secret's kind and metadata.
type leakCorruption struct {
	name, tmpl string
	// big makes the value about 1 MB.
	big bool
}

// leakCorruptions: every shape of Secret the render, explain, verify and
// diff must refuse or warn about without showing the value.
var leakCorruptions = []leakCorruption{
	{name: "valid stringData", tmpl: "stringData:\n  password: $V\n"},
	{name: "valid data", tmpl: "data:\n  password: $B\n"},
	{name: "data, bad indentation", tmpl: "data:\n  password: $B\n   other: $B\n"},
	{name: "stringData, bad indentation", tmpl: "stringData:\n    password: $V\n  other: $V\n"},
	{name: "a continuation less indented", tmpl: "data:\n  password: $B\n $B\n"},
	{name: "a value on the next line, unindented", tmpl: "stringData:\n  password:\n  $V\n"},
	{name: "a tab for indentation", tmpl: "stringData:\n\tpassword: $V\n"},
	{name: "a tab in the value", tmpl: "stringData:\n  password: $V\t$V\n"},
	{name: "an unterminated double quote", tmpl: "stringData:\n  password: \"$V\n"},
	{name: "an unterminated single quote", tmpl: "stringData:\n  password: '$V\n"},
	{name: "an unterminated flow mapping", tmpl: "stringData: {password: $V\n"},
	{name: "a bad escape", tmpl: "stringData:\n  password: \"$V\\q\"\n"},
	{name: "a colon in the value", tmpl: "stringData:\n  password: $V: x\n"},
	{name: "a block scalar, then less indented", tmpl: "stringData:\n  password: |\n    $V\n   $V\n"},
	{name: "data not base64", tmpl: "data:\n  password: $V\n"},
	{name: "data, base64 then junk", tmpl: "data:\n  password: $B!\n"},
	{name: "data, base64 cut short", tmpl: "data:\n  password: $Bx\n"},
	{name: "data a list", tmpl: "data:\n- $V\n- $B\n"},
	{name: "data a scalar", tmpl: "data: $V\n"},
	{name: "data a base64 scalar", tmpl: "data: $B\n"},
	{name: "data a list value", tmpl: "data:\n  password: [$B]\n"},
	{name: "stringData a scalar", tmpl: "stringData: $V\n"},
	{name: "stringData a list", tmpl: "stringData: [$V]\n"},
	{name: "stringData a map value", tmpl: "stringData:\n  password:\n    nested: $V\n"},
	{name: "stringData a flow map value", tmpl: "stringData:\n  password: {nested: $V}\n"},
	{name: "a number tag", tmpl: "stringData:\n  password: !!int $V\n"},
	{name: "a bool tag", tmpl: "stringData:\n  password: !!bool $V\n"},
	{name: "a timestamp tag", tmpl: "stringData:\n  password: !!timestamp $V\n"},
	{name: "a binary tag, not base64", tmpl: "data:\n  password: !!binary $V\n"},
	{name: "a local tag", tmpl: "stringData:\n  password: !$V\n"},
	{name: "a value that starts with *", tmpl: "stringData:\n  password: *$V\n"},
	{name: "a value that starts with &", tmpl: "stringData:\n  password: &$V\n"},
	{name: "a value that starts with &, then an alias", tmpl: "stringData:\n  password: &$V x\n  other: *$V\n"},
	{name: "a value that starts with %", tmpl: "stringData:\n  password: %$V\n"},
	{name: "a value that starts with @", tmpl: "stringData:\n  password: @$V\n"},
	{name: "a value that starts with a backquote", tmpl: "stringData:\n  password: `$V\n"},
	{name: "a merge key with a scalar", tmpl: "stringData:\n  <<: $V\n"},
	{name: "a merge key with a list of scalars", tmpl: "stringData:\n  <<: [$V]\n"},
	{name: "a NUL byte", tmpl: "stringData:\n  password: $V\x00$V\n"},
	{name: "an escaped NUL byte", tmpl: "stringData:\n  password: \"$V\\0$V\"\n"},
	{name: "a key twice in data", tmpl: "data:\n  password: $B\n  password: $B\n"},
	{name: "a key twice in stringData", tmpl: "stringData:\n  password: $V\n  password: $V\n"},
	{name: "a null beside the value", tmpl: "stringData:\n  password: null\n  other: $V\n"},
	{name: "a number beside the value", tmpl: "stringData:\n  password: 12345\n  other: $V\n"},
	{name: "a binary tag on base64", tmpl: "data:\n  password: !!binary $B\n"},
	{name: "stringData twice", tmpl: "stringData:\n  password: $V\nstringData:\n  other: x\n"},
	{name: "data twice", tmpl: "data:\n  password: $B\ndata:\n  other: $B\n"},
	{name: "a key in data and stringData", tmpl: "data:\n  password: $B\nstringData:\n  password: $V\n"},
	{name: "a service account token, not base64", tmpl: "type: kubernetes.io/service-account-token\ndata:\n  token: $V\n"},
	{name: "a docker config, not JSON", tmpl: "type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{\"auths\": $V'\n"},
	{name: "a TLS Secret, not PEM", tmpl: "type: kubernetes.io/tls\nstringData:\n  tls.crt: $V\n  tls.key: $V\n"},
	{name: "binaryData", tmpl: "binaryData:\n  password: $B\n"},
	{name: "binaryData not base64", tmpl: "binaryData:\n  password: $V\n"},
	{name: "malformed YAML after the value", tmpl: "stringData:\n  password: $V\ndata: [unclosed\n"},
	{name: "flow mappings", tmpl: "stringData: {password: $V, other: $V}\n"},
	{name: "a flow mapping, data not base64", tmpl: "data: {password: $V}\n"},
	{name: "a flow mapping, a key twice", tmpl: "data: {password: $B, password: $B}\n"},
	{name: "a flow mapping Secret", tmpl: "{apiVersion: v1, kind: $K, metadata: {name: s}, data: {password: $B}, stringData: {other: $V}}\n"},
	{name: "a flow mapping Secret, not base64", tmpl: "{apiVersion: v1, kind: $K, metadata: {name: s}, data: {password: $V}}\n"},
	{name: "a flow mapping Secret, unclosed", tmpl: "{apiVersion: v1, kind: $K, metadata: {name: s}, data: {password: $B}\n"},
	{name: "the value in kubectl's last-applied annotation", tmpl: `{apiVersion: v1, kind: $K, metadata: {name: s, annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"data": {"password": "$B"}}'}}, data: {password: $V}}` + "\n"},
	{name: "the value in an annotation that is a list", tmpl: "{apiVersion: v1, kind: $K, metadata: {name: s, annotations: {kubectl.kubernetes.io/last-applied-configuration: [$V]}}, data: {password: $B}}\n"},
	{name: "the value in a label", tmpl: "{apiVersion: v1, kind: $K, metadata: {name: s, labels: {a: {b: $V}}}, data: {password: $B}}\n"},
	{name: "a JSON Secret", tmpl: `{"apiVersion": "v1", "kind": "$K", "metadata": {"name": "s"}, "stringData": {"password": "$V"}}` + "\n"},
	{name: "a JSON Secret, a string unterminated", tmpl: `{"apiVersion": "v1", "kind": "$K", "metadata": {"name": "s"}, "stringData": {"password": "$V}}` + "\n"},
	{name: "a JSON Secret, a bad escape", tmpl: `{"apiVersion": "v1", "kind": "$K", "metadata": {"name": "s"}, "stringData": {"password": "$V\\x"}}` + "\n"},
	{name: "a JSON Secret, a number for a value", tmpl: `{"apiVersion": "v1", "kind": "$K", "metadata": {"name": "s"}, "stringData": {"password": 1, "other": "$V"}}` + "\n"},
	{name: "a JSON Secret, then another object", tmpl: `{"apiVersion": "v1", "kind": "$K", "metadata": {"name": "s"}, "data": {"password": "$B"}}` + "\n{}\n"},
	{name: "a value that starts with &, its own alias", tmpl: "stringData:\n  password: &$V [*$V]\n"},
	{name: "text after the document end", tmpl: "stringData:\n  other: x\n...\nstringData:\n  password: $V\n"},
	{name: "the Secret on a marker line", tmpl: "--- {apiVersion: v1, kind: $K, metadata: {name: s}, data: {password: $B}}\n"},
	{name: "a value line that starts with ---", tmpl: "{apiVersion: v1, kind: $K, metadata: {name: s}, stringData: {password: x\n---$V}}\n"},
	{name: "a 1 MB value", tmpl: "stringData:\n  password: $V\n", big: true},
	{name: "a 1 MB value, not base64", tmpl: "data:\n  password: $V\n", big: true},
	{name: "a 1 MB value, unterminated", tmpl: "stringData:\n  password: \"$V\n", big: true},
}

// leakSecret writes the Secret s of a corruption, its value the leak
// period and suffix (about 1 MB of the period when big), after kind, with
// the Deployment that reads it.
func leakSecret(c leakCorruption, kind, suffix string) string {
	v := leakPeriod
	if c.big {
		v = strings.Repeat(leakPeriod, 1<<20/len(leakPeriod))
	}
	v += suffix
	doc := strings.NewReplacer("$V", v, "$B", base64.StdEncoding.EncodeToString([]byte(v)), "$K", kind).Replace(c.tmpl)
	switch {
	case strings.HasPrefix(c.tmpl, "--- "):
		return leakConsumer + doc
	case !strings.HasPrefix(c.tmpl, "{"):
		doc = "apiVersion: v1\nkind: " + kind + "\nmetadata:\n  name: s\n" + doc
	}
	return doc + "---\n" + leakConsumer
}

// leakConsumer reads the Secret s by key, whole and as an image pull
// Secret.
const leakConsumer = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      imagePullSecrets: [{name: s}]\n" +
	"      containers:\n      - name: c\n        image: c:1\n        env: [{name: P, valueFrom: {secretKeyRef: {name: s, key: password}}}]\n" +
	"        envFrom: [{secretRef: {name: s}}]\n"

// leakFragments is every 8 bytes of a leak value, as written, in base64
// (whatever the value's length) and in hex, and the first 8 bytes of the
// SHA-256 digest of a whole value (hashing.DigestOf), in hex and base64:
// a key's own digest would let anyone try guesses of a short value.
func leakFragments() []string {
	var frags []string
	windows := func(s string, n int) {
		for i := 0; i+n <= len(s); i++ {
			frags = append(frags, s[i:i+n])
		}
	}
	long := strings.Repeat(leakPeriod, 6)
	windows(long[:len(leakPeriod)+7], 8)
	for n := 1; n <= 3; n++ {
		windows(base64.StdEncoding.EncodeToString([]byte(long[:len(leakPeriod)*n])), 8)
	}
	windows(base64.StdEncoding.EncodeToString([]byte(long)), 8)
	windows(hex.EncodeToString([]byte(long[:len(leakPeriod)+7])), 16)
	for _, v := range []string{leakPeriod, strings.Repeat(leakPeriod, 1<<20/len(leakPeriod))} {
		d := sha256.Sum256([]byte(v))
		frags = append(frags, hex.EncodeToString(d[:8]), base64.StdEncoding.EncodeToString(d[:])[:11])
	}
	return frags
}

// leakCheck fails the test when shown holds a fragment of the value more
// often than the input (what a render writes back) does.
func leakCheck(t *testing.T, frags []string, what, input, shown string) {
	t.Helper()
	for _, f := range frags {
		if n, m := strings.Count(shown, f), strings.Count(input, f); n > m {
			i := strings.Index(shown, f)
			t.Errorf("%s shows the Secret's value (%q %d times, the input %d):\n%s", what, f, n, m, shown[max(0, i-200):min(len(shown), i+200)])
			return
		}
	}
}

// leakForms are the ways a stream reaches confighash: as written (Helm's
// post-renderer, pipelines), as the items of a KRM ResourceList (kustomize,
// kpt), its Secret inside a v1 List, with CRLF line ends, and hashed with an
// HMAC key ($CONFIGHASH_HMAC_KEY), itself a secret.
var leakForms = []struct {
	name string
	wrap func(stream string) string
	key  string
}{
	{name: "stream", wrap: func(s string) string { return s }},
	{name: "ResourceList", wrap: func(s string) string { return testtools.ResourceList(s, "") }},
	{name: "List", wrap: func(s string) string {
		docs := testtools.Documents(s)
		return testtools.List(docs[0]) + "---\n" + strings.Join(docs[1:], "\n---\n") + "\n"
	}},
	{name: "CRLF", wrap: func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }},
	{name: "HMAC key", wrap: func(s string) string { return s }, key: leakPeriod},
}

// runLeak runs one command on input (render, explain, verify: on standard
// input; diff: against a good render both ways, in each format) and checks
// that nothing it prints shows the value: standard error never, standard
// output no more often than the input holds it (the render writes its
// input back), and nothing on standard output when it fails.
func runLeak(t *testing.T, frags []string, good, input, key string, commands [][]string) {
	t.Helper()
	getenv := func(name string) string {
		if name == hmackey.EnvKey {
			return key
		}
		return ""
	}
	var files *strings.Replacer
	for _, args := range commands {
		stdin := input
		if len(args) > 0 && args[0] == "diff" {
			if files == nil {
				o, n := diffInputs(t, good, input)
				files = strings.NewReplacer("OLD", o, "NEW", n)
			}
			args = append([]string(nil), args...)
			for i, a := range args {
				args[i] = files.Replace(a)
			}
			stdin = ""
		}
		var out, errb bytes.Buffer
		code := cli.Run(args, cli.IO{In: strings.NewReader(stdin), Out: &out, Err: &errb, Getenv: getenv})
		stdout, stderr := out.String(), errb.String()
		what := fmt.Sprintf("confighash %s (exit %d)", strings.Join(args, " "), code)
		leakCheck(t, frags, what+", standard error", "", stderr)
		if len(args) == 0 {
			leakCheck(t, frags, what+", standard output", input, stdout)
		} else {
			leakCheck(t, frags, what+", standard output", "", stdout)
		}
		failed := code != 0
		if len(args) > 0 && args[0] == "diff" {
			failed = code == 2 || (code == 1 && !strings.Contains(strings.Join(args, " "), "--exit-code"))
		}
		if failed && stdout != "" {
			t.Errorf("%s failed and wrote to standard output:\n%.400s", what, stdout)
		}
	}
}

// leakCommands: the render, and each command that reads a render.
var leakCommands = [][]string{
	{}, {"explain"}, {"explain", "--json"}, {"verify"},
	{"diff", "OLD", "NEW"}, {"diff", "--json", "OLD", "NEW"}, {"diff", "--markdown", "NEW", "OLD"},
	{"diff", "--json", "--exit-code", "NEW", "OLD"},
}

// TestSecretValueNeverLeaks: a Secret's value, written out, in base64 or in
// hex, 8 bytes of it or more, never reaches standard error of the render,
// explain, verify or diff, nor their standard output beyond the render
// writing its input back, whatever is wrong with the Secret
// (leakCorruptions) and however the stream arrives (leakForms), and a
// command that fails writes nothing on standard output.
func TestSecretValueNeverLeaks(t *testing.T) {
	frags := leakFragments()
	good := leakSecret(leakCorruptions[0], "Secret", "")
	for _, c := range leakCorruptions {
		for _, kind := range []string{"Secret", "secret"} {
			if kind != "Secret" && c.big {
				continue
			}
			for _, form := range leakForms {
				t.Run(c.name+"/"+kind+"/"+form.name, func(t *testing.T) {
					runLeak(t, frags, good, form.wrap(leakSecret(c, kind, "")), form.key, leakCommands)
				})
			}
		}
	}
}

// FuzzSecretValueNeverLeaks: whatever follows a Secret's value in each
// corruption of leakCorruptions (quotes, colons, new lines, bytes that are
// not UTF-8), in each form and kind, the render, explain and verify never
// show the value.
func FuzzSecretValueNeverLeaks(f *testing.F) {
	var small []leakCorruption
	for _, c := range leakCorruptions {
		if !c.big {
			small = append(small, c)
		}
	}
	for i := range small {
		f.Add(uint8(i), uint8(i), "")
	}
	for _, s := range []string{"\"", "'", ": x", "\n", "\n  x: y", " #", "\t", "\x00", "\xff", "\\", "}", "]", "\n---\n"} {
		f.Add(uint8(0), uint8(0), s)
		f.Add(uint8(1), uint8(1), s)
	}
	frags := leakFragments()
	good := leakSecret(small[0], "Secret", "")
	f.Fuzz(func(t *testing.T, i, how uint8, suffix string) {
		kind := "Secret"
		if how&0x80 != 0 {
			kind = "secret"
		}
		form := leakForms[int(how&0x7f)%len(leakForms)]
		input := form.wrap(leakSecret(small[int(i)%len(small)], kind, suffix))
		runLeak(t, frags, good, input, form.key, [][]string{{}, {"explain", "--json"}, {"verify"}})
	})
}

// leakTestdir writes files into a new folder and returns it.
func leakTestdir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSecretValueNeverLeaksThroughTools: the same Secrets through the real
// tools that run confighash: kustomize build with confighash as its exec
// KRM function, and helm template with confighash as Helm 3's post-renderer
// and as Helm 4's plugin. Where confighash saw the Secret, nothing the tool
// prints shows its value but the render itself.
func TestSecretValueNeverLeaksThroughTools(t *testing.T) {
	confighash := testtools.Tool(t, "confighash")
	kustomize := testtools.Tool(t, "kustomize")
	h3, h4 := testtools.NewHelm(t, 3), testtools.NewHelm(t, 4)
	h4.InstallPlugin(t, filepath.Join(testtools.RepoRoot(t), "postrenderer", "plugin"))
	frags := leakFragments()
	for _, c := range leakCorruptions {
		input := leakSecret(c, "Secret", "")
		t.Run(c.name, func(t *testing.T) {
			// A wrapper that notes that confighash ran, then runs it.
			ran := filepath.Join(t.TempDir(), "ran")
			wrapper := filepath.Join(t.TempDir(), "confighash")
			if err := os.WriteFile(wrapper, []byte("#!/bin/sh\ntouch '"+ran+"'\nexec '"+confighash+"' \"$@\"\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			tree := leakTestdir(t, map[string]string{
				"kustomization.yaml": "resources: [input.yaml]\ntransformers: [confighash.yaml]\n",
				"input.yaml":         input,
				"confighash.yaml":    testtools.ExecFunctionConfig(wrapper),
			})
			chart := leakTestdir(t, map[string]string{
				"Chart.yaml":         "apiVersion: v2\nname: leak\nversion: 0.1.0\n",
				"templates/all.yaml": input,
			})
			for _, tool := range []struct {
				name string
				run  func() testtools.Result
			}{
				{"kustomize", func() testtools.Result {
					return testtools.Run(t, tree, nil, nil, kustomize, "build", "--enable-alpha-plugins", "--enable-exec", ".")
				}},
				{"helm3", func() testtools.Result {
					return h3.Run(t, nil, "template", "web", chart, "--post-renderer", wrapper)
				}},
				{"helm4", func() testtools.Result {
					return h4.Run(t, []string{"CONFIGHASH_BIN=" + wrapper}, "template", "web", chart, "--post-renderer", "confighash")
				}},
			} {
				_ = os.Remove(ran)
				res := tool.run()
				if _, err := os.Stat(ran); err != nil {
					// The tool refused the input itself; what it says is
					// its own (kustomize and Helm quote YAML errors).
					t.Logf("%s refused the input without running confighash (exit %d): %.300s", tool.name, res.ExitCode, res.Stderr)
					continue
				}
				what := fmt.Sprintf("%s (exit %d)", tool.name, res.ExitCode)
				leakCheck(t, frags, what+", standard error", "", res.Stderr)
				leakCheck(t, frags, what+", standard output", input, res.Stdout)
			}
		})
	}
}
