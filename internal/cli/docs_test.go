package cli_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/confighash/confighash/internal/testing/testtools"
)

// handUse is one use of hashing/HASHING.md section 4: a kind, a name and
// the consumed keys with their decoded values (a key the object lacks has
// no entry in values).
type handUse struct {
	kind, name string
	keys       []string
	values     map[string][]byte
}

// handHash computes the plain value as hashing/HASHING.md (sections 4 and
// 5) writes it, byte by byte, without the hashing package.
func handHash(namespace string, uses []handUse) string {
	u32 := func(b []byte, n int) []byte { return binary.BigEndian.AppendUint32(b, uint32(n)) }
	str := func(b []byte, s string) []byte { return append(u32(b, len(s)), s...) }
	enc := []byte("confighash.dev/hash/v1\n")
	enc = u32(enc, len(uses))
	slices.SortFunc(uses, func(a, b handUse) int {
		return strings.Compare(a.kind+"\x00"+a.name, b.kind+"\x00"+b.name)
	})
	for _, u := range uses {
		enc = str(str(str(enc, u.kind), namespace), u.name)
		enc = append(enc, 1)
		keys := slices.Sorted(slices.Values(slices.Compact(slices.Sorted(slices.Values(u.keys)))))
		enc = u32(enc, len(keys))
		for _, k := range keys {
			enc = str(enc, k)
			v, ok := u.values[k]
			if !ok {
				enc = append(enc, 0)
				continue
			}
			sum := sha256.Sum256(v)
			enc = append(append(enc, 1), sum[:]...)
		}
	}
	sum := sha256.Sum256(enc)
	return "v1-sha256:" + hex.EncodeToString(sum[:])
}

// TestHashAsTheSpecWritesIt: docs/hashing.md sends the reader to
// hashing/HASHING.md; a hash computed by hand from its text (ConfigMap data,
// binaryData, Secret stringData over data) is the annotation bin/confighash
// writes.
func TestHashAsTheSpecWritesIt(t *testing.T) {
	confighash := testtools.Tool(t, "confighash")
	der := []byte{0x30, 0x82, 0x00, 0xff, 0x0a, 0x00, 0xfe}
	const canary = "CANARY-hand-s3cr3t"
	for _, tc := range []struct {
		name, stream string
		uses         []handUse
	}{{
		name: "ConfigMap data, consumed whole",
		stream: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, labels: {a: b}}\ndata:\n  LOG_LEVEL: debug\n  motd: |\n    h\u00e9llo\n---\n" +
			"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: c:1\n        envFrom: [{configMapRef: {name: app}}]\n",
		uses: []handUse{{kind: "ConfigMap", name: "app", keys: []string{"motd", "LOG_LEVEL"},
			values: map[string][]byte{"LOG_LEVEL": []byte("debug"), "motd": []byte("h\u00e9llo\n")}}},
	}, {
		name: "ConfigMap binaryData, one key of it through volume items",
		stream: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: certs}\ndata: {note: unread}\nbinaryData:\n  cert.der: " + base64.StdEncoding.EncodeToString(der) + "\n---\n" +
			"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: c:1}]\n      volumes:\n      - name: certs\n        configMap: {name: certs, items: [{key: cert.der, path: c.der}]}\n",
		uses: []handUse{{kind: "ConfigMap", name: "certs", keys: []string{"cert.der"}, values: map[string][]byte{"cert.der": der}}},
	}, {
		name: "Secret stringData over data, with a ConfigMap key, sorted by kind",
		stream: "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\ndata:\n  password: " + base64.StdEncoding.EncodeToString([]byte("old")) + "\n  user: " + base64.StdEncoding.EncodeToString([]byte("admin")) + "\nstringData:\n  password: " + canary + "\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: zz}\ndata: {LOG_LEVEL: info, other: x}\n---\n" +
			"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: c:1\n        env: [{name: L, valueFrom: {configMapKeyRef: {name: zz, key: LOG_LEVEL}}}]\n      volumes: [{name: s, secret: {secretName: db}}]\n",
		uses: []handUse{
			{kind: "Secret", name: "db", keys: []string{"user", "password"}, values: map[string][]byte{"password": []byte(canary), "user": []byte("admin")}},
			{kind: "ConfigMap", name: "zz", keys: []string{"LOG_LEVEL"}, values: map[string][]byte{"LOG_LEVEL": []byte("info")}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res := testtools.Run(t, "", nil, []byte(tc.stream), confighash, "--namespace", "shop")
			require.Equal(t, 0, res.ExitCode, res.Stderr)
			m := regexp.MustCompile(`confighash\.dev/hash: (\S+)`).FindAllStringSubmatch(res.Stdout, -1)
			require.Len(t, m, 1, res.Stdout)
			assert.Equal(t, handHash("shop", tc.uses), m[0][1])
			assert.NotContains(t, res.Stderr, canary)
		})
	}
}

// helpFlags returns the flags a command's -h lists.
func helpFlags(t *testing.T, name string, args ...string) []string {
	t.Helper()
	res := testtools.Run(t, "", nil, nil, name, append(args, "-h")...)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  -([A-Za-z][A-Za-z0-9-]*)`).FindAllStringSubmatch(res.Stdout, -1) {
		flags = append(flags, m[1])
	}
	require.NotEmpty(t, flags, res.Stdout)
	return flags
}

// dashed writes a flag as the docs do: --name, or -n for one letter.
func dashed(flag string) string {
	if len(flag) == 1 {
		return "-" + flag
	}
	return "--" + flag
}

// TestFlagsDocumented: every flag a command's -h lists is in the page that
// documents the command, and every flag a page's command lines give a
// confighash command is one it takes.
func TestFlagsDocumented(t *testing.T) {
	confighash := testtools.Tool(t, "confighash")
	plugin := testtools.Tool(t, "kubectl-confighash")
	root := testtools.RepoRoot(t)
	flags := map[string][]string{
		"":        helpFlags(t, confighash),
		"explain": helpFlags(t, confighash, "explain"),
		"verify":  helpFlags(t, confighash, "verify"),
		"diff":    helpFlags(t, confighash, "diff"),
		"status":  helpFlags(t, plugin, "status"),
		"version": nil,
	}
	pages := map[string]string{"": "README.md", "explain": "README.md", "verify": "README.md", "diff": "docs/diff.md", "status": "docs/status.md"}
	for cmd, page := range pages {
		text, err := os.ReadFile(filepath.Join(root, page))
		require.NoError(t, err)
		var undocumented []string
		for _, f := range flags[cmd] {
			if !strings.Contains(string(text), dashed(f)) {
				undocumented = append(undocumented, dashed(f))
			}
		}
		assert.Empty(t, undocumented, "flags confighash %s takes that %s does not name", cmd, page)
	}

	command := regexp.MustCompile(`^(?:kubectl\s+|\S*/)?confighash(?:\s|$)`)
	lines := 0
	for _, page := range docPages(t, root) {
		for _, line := range codeLines(page.text) {
			for _, segment := range strings.Split(line, "|") {
				segment = strings.TrimSpace(segment)
				if !command.MatchString(segment) {
					continue
				}
				fields := strings.Fields(strings.TrimPrefix(segment, "kubectl "))[1:] // after confighash or a path to it
				cmd := ""
				if len(fields) > 0 && slices.Contains([]string{"explain", "verify", "diff", "status", "version"}, fields[0]) {
					cmd, fields = fields[0], fields[1:]
				}
				lines++
				for _, f := range fields {
					if f == "#" {
						break
					}
					f = strings.Trim(f, "[]") // a usage line's [--json]
					name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
					if !strings.HasPrefix(f, "-") || name == "" {
						continue
					}
					assert.Contains(t, flags[cmd], name, "%s: %q gives confighash %s a flag it does not take", page.rel, segment, cmd)
				}
			}
		}
	}
	t.Logf("%d confighash command lines in the docs' code blocks", lines)
	assert.Greater(t, lines, 10, "command lines found")
}

// docPage is a page the docs tests read: its path, the path relative to
// the repository, its text.
type docPage struct{ path, rel, text string }

// docPages returns the pages the docs tests read: docs/*.md, the
// examples' READMEs and README.md.
func docPages(t *testing.T, root string) []docPage {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	examples, err := filepath.Glob(filepath.Join(root, "examples", "*", "README.md"))
	require.NoError(t, err)
	var pages []docPage
	for _, path := range append(append(paths, examples...), filepath.Join(root, "README.md")) {
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		rel, err := filepath.Rel(root, path)
		require.NoError(t, err)
		pages = append(pages, docPage{path: path, rel: rel, text: string(text)})
	}
	return pages
}

// fenced matches a fenced code block of a Markdown page.
var fenced = regexp.MustCompile("(?s)```.*?```")

// codeLines returns the lines of a Markdown page's fenced code blocks, a
// line continued with a backslash joined to the next.
func codeLines(text string) []string {
	var lines []string
	in, cont := false, ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if !in {
			continue
		}
		line = strings.TrimPrefix(line, "$ ")
		if strings.HasSuffix(line, "\\") {
			cont += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		lines = append(lines, cont+line)
		cont = ""
	}
	return lines
}

// writtenRow is a row of README.md's table "What gets written": the
// annotation key and where it goes.
var writtenRow = regexp.MustCompile("(?m)^\\| `(confighash\\.dev/[a-z-]+):[^`]*` \\| ([^|]+) \\|")

// TestWhereAnnotationsGo: each annotation README.md's table "What gets
// written" says the render writes is where its "where" column says, on a
// Deployment and a Job that read a ConfigMap of the stream and a Secret
// outside it, rendered keyed: "pod template" is the pod template's
// annotations, "workload" the workload's own, and "(a Job: the Job
// itself)" moves it for a Job. A Job's row without that note means its pod
// template.
func TestWhereAnnotationsGo(t *testing.T) {
	confighash := testtools.Tool(t, "confighash")
	readme, err := os.ReadFile(filepath.Join(testtools.RepoRoot(t), "README.md"))
	require.NoError(t, err)
	keyFile := filepath.Join(t.TempDir(), "hmac.key")
	require.NoError(t, os.WriteFile(keyFile, []byte("a key of the test\n"), 0o600))
	const pod = "    spec:\n      containers: [{name: c, image: c:1, envFrom: [{configMapRef: {name: app}}, {secretRef: {name: db}}]}]\n"
	stream := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {LOG_LEVEL: info}\n---\n" +
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n" + pod + "---\n" +
		"apiVersion: batch/v1\nkind: Job\nmetadata: {name: once}\nspec:\n  template:\n" + pod
	res := testtools.Run(t, "", nil, []byte(stream), confighash, "--namespace", "shop", "--quiet", "--hmac-key-file", keyFile)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	type annotated struct {
		Metadata struct{ Annotations map[string]string }
	}
	written := map[string]struct{ own, template map[string]string }{}
	for _, doc := range testtools.Documents(res.Stdout) {
		var o struct {
			Kind string
			annotated
			Spec struct{ Template annotated }
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &o))
		written[o.Kind] = struct{ own, template map[string]string }{o.Metadata.Annotations, o.Spec.Template.Metadata.Annotations}
	}
	rows := writtenRow.FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, rows, "README.md has the table What gets written")
	for _, row := range rows {
		key, where := row[1], strings.TrimSpace(row[2])
		if strings.Contains(where, "(yours)") {
			continue // written by the user, not the render
		}
		for _, kind := range []string{"Deployment", "Job"} {
			onTemplate := strings.HasPrefix(where, "pod template")
			if kind == "Job" && strings.Contains(where, "(a Job: the Job itself)") {
				onTemplate = false
			}
			got := written[kind]
			if onTemplate {
				assert.Contains(t, got.template, key, "README.md says the render writes %s on the pod template (%q); on the %s", key, where, kind)
				assert.NotContains(t, got.own, key, "README.md says the render writes %s on the pod template (%q); on the %s", key, where, kind)
			} else {
				assert.Contains(t, got.own, key, "README.md says the render writes %s on the workload (%q); on the %s", key, where, kind)
				assert.NotContains(t, got.template, key, "README.md says the render writes %s on the workload (%q); on the %s", key, where, kind)
			}
		}
	}
}

// testFuncs returns the test, fuzz and example functions (bench false) or
// the benchmarks (bench true) of the Go package in dir.
func testFuncs(t *testing.T, dir string, bench bool) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "%s holds tests", dir)
	var names []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`).FindAllSubmatch(src, -1) {
			if name := string(m[1]); strings.HasPrefix(name, "Benchmark") == bench {
				names = append(names, name)
			}
		}
	}
	return names
}

// TestRunPatternsDocumented: each `go test -run P` or `-bench P` in the
// docs (code blocks and inline code) runs what it names. An alternative of
// P that is the name of a test (with or without its Test or Benchmark
// prefix) selects that test alone: `-run TestRealCharts` also ran
// TestRealChartsOnCluster and TestRealChartsReleaseLifecycle, minutes on
// the control plane. One that names no test is a family (`TestFault`) and
// selects at least one.
func TestRunPatternsDocumented(t *testing.T) {
	root := testtools.RepoRoot(t)
	checked := 0
	for _, page := range docPages(t, root) {
		commands := codeLines(page.text)
		prose := fenced.ReplaceAllString(page.text, "")
		for _, m := range regexp.MustCompile("`([^`]*go test [^`]*)`").FindAllStringSubmatch(strings.Join(strings.Fields(prose), " "), -1) {
			commands = append(commands, m[1])
		}
		for _, command := range commands {
			command, _, _ = strings.Cut(command, " #")
			for _, segment := range regexp.MustCompile(`\||&&|;`).Split(command, -1) {
				_, args, ok := strings.Cut(segment, "go test ")
				if !ok {
					continue
				}
				fields := strings.Fields(args)
				var pkgs []string
				for _, f := range fields {
					if strings.HasPrefix(f, "./") && f != "./..." {
						pkgs = append(pkgs, strings.TrimSuffix(strings.TrimSuffix(f, "/..."), "/"))
					}
				}
				for i, f := range fields {
					flagName, value, hasValue := strings.Cut(strings.TrimLeft(f, "-"), "=")
					if (flagName != "run" && flagName != "bench") || !strings.HasPrefix(f, "-") {
						continue
					}
					if !hasValue && i+1 < len(fields) {
						value = fields[i+1]
					}
					pattern, _, _ := strings.Cut(strings.Trim(value, `'"`), "/")
					if pattern == "^$" {
						continue
					}
					for _, pkg := range pkgs {
						checked++
						where := fmt.Sprintf("%s: go test -%s %s %s", page.rel, flagName, value, pkg)
						checkRunPattern(t, where, pattern, flagName == "bench", testFuncs(t, filepath.Join(root, pkg), flagName == "bench"))
					}
				}
			}
		}
	}
	t.Logf("%d -run and -bench patterns in the docs", checked)
	assert.Greater(t, checked, 10, "patterns found")
}

// checkRunPattern checks one -run or -bench pattern against the functions
// of its package, as TestRunPatternsDocumented describes.
func checkRunPattern(t *testing.T, where, pattern string, bench bool, funcs []string) {
	t.Helper()
	prefix := "Test"
	if bench {
		prefix = "Benchmark"
	}
	for _, alt := range strings.Split(pattern, "|") {
		re, err := regexp.Compile(alt)
		require.NoError(t, err, where)
		name := strings.Trim(alt, "^$")
		var selected, named []string
		for _, f := range funcs {
			if re.MatchString(f) {
				selected = append(selected, f)
			}
			if f == name || f == prefix+name {
				named = append(named, f)
			}
		}
		if len(named) == 0 {
			assert.NotEmpty(t, selected, "%s: %q selects nothing", where, alt)
			continue
		}
		slices.Sort(selected)
		assert.Equal(t, named, selected, "%s: %q names %s and runs %s: anchor it (^%s$)", where, alt, named[0], selected, named[0])
	}
}

// TestNamedTestsExist: every test, benchmark or fuzz target a page names in
// inline code is one the repository defines (a name that is no function
// must be the start of some, as `-run 'TestFault'` is), and one named as in
// a file ("`TestX` in `controller/x_test.go`", "`TestX` (`x_test.go`") is
// defined in that file. The docs cite tests as the proof of what they
// say; a renamed test leaves them citing nothing.
func TestNamedTestsExist(t *testing.T) {
	root := testtools.RepoRoot(t)
	defined := map[string][]string{} // function name: the files defining it, relative to root
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w*)\(`).FindAllSubmatch(src, -1) {
			defined[string(m[1])] = append(defined[string(m[1])], filepath.ToSlash(rel))
		}
		return nil
	}))
	name := regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z]\w*`)
	inFile := regexp.MustCompile("`((?:Test|Benchmark|Fuzz)[A-Z]\\w*)`,? (?:in |\\()`([\\w./-]+_test\\.go)`")
	named := 0
	for _, page := range docPages(t, root) {
		prose := strings.Join(strings.Fields(fenced.ReplaceAllString(page.text, "")), " ")
		for _, span := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(prose, -1) {
			for _, n := range name.FindAllString(span[1], -1) {
				named++
				if _, ok := defined[n]; ok {
					continue
				}
				prefix := false
				for d := range defined {
					prefix = prefix || strings.HasPrefix(d, n)
				}
				assert.True(t, prefix, "%s names %s, which no _test.go defines", page.rel, n)
			}
		}
		for _, m := range inFile.FindAllStringSubmatch(prose, -1) {
			files := defined[m[1]]
			assert.True(t, slices.ContainsFunc(files, func(f string) bool { return f == m[2] || strings.HasSuffix(f, "/"+m[2]) }),
				"%s names %s in %s; it is defined in %v", page.rel, m[1], m[2], files)
		}
	}
	t.Logf("%d tests named in the docs", named)
	assert.Greater(t, named, 50, "test names found")
}

// fencedBlock returns the first fenced code block of lang after the line
// heading in a Markdown page, without its fences.
func fencedBlock(t *testing.T, page, heading, lang string) string {
	t.Helper()
	_, after, ok := strings.Cut(page, "\n"+heading+"\n")
	require.True(t, ok, "the page has the heading %q", heading)
	_, block, ok := strings.Cut(after, "\n```"+lang+"\n")
	require.True(t, ok, "a %s block follows %q", lang, heading)
	block, _, ok = strings.Cut(block, "\n```\n")
	require.True(t, ok, "the %s block after %q ends", lang, heading)
	return block
}

// TestDiffExampleAsDocumented makes the edits docs/diff.md's real-output
// example describes to the shared corpus's Argo CD install (two keys added
// to argocd-cmd-params-cm and the Redis image bumped; then without the
// bump), runs the command its console block shows and the --markdown one,
// and requires the output the page shows, byte for byte.
func TestDiffExampleAsDocumented(t *testing.T) {
	confighash := testtools.Tool(t, "confighash")
	install, err := os.ReadFile(filepath.Join(testtools.Corpus(t), "argo-cd", "install.yaml"))
	require.NoError(t, err)
	page, err := os.ReadFile(filepath.Join(testtools.RepoRoot(t), "docs", "diff.md"))
	require.NoError(t, err)
	const heading = "## Example (real output)"
	console := fencedBlock(t, string(page), heading, "console")
	markdown := fencedBlock(t, string(page), heading, "markdown")

	const params = "\n  name: argocd-cmd-params-cm\n---\n"
	require.Equal(t, 1, strings.Count(string(install), params), "install.yaml holds argocd-cmd-params-cm without data")
	keys := strings.Replace(string(install), params,
		"\n  name: argocd-cmd-params-cm\ndata:\n  server.insecure: \"true\"\n  reposerver.parallelism.limit: \"10\"\n---\n", 1)
	redis := regexp.MustCompile(`(image: public\.ecr\.aws/docker/library/redis:)\S+`)
	require.Len(t, redis.FindAllString(keys, -1), 1, "install.yaml runs one Redis image")
	dir := t.TempDir()
	for name, content := range map[string]string{
		"old.yaml": string(install), "new.yaml": redis.ReplaceAllString(keys, "${1}9.9.9-alpine"), "keys.yaml": keys,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}

	command, want, _ := strings.Cut(console, "\n")
	args, ok := strings.CutPrefix(command, "$ confighash ")
	require.True(t, ok, "the console block starts with the confighash command: %q", command)
	res := testtools.Run(t, dir, nil, nil, confighash, strings.Fields(args)...)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	assert.Equal(t, want+"\n", res.Stdout, "docs/diff.md's console block against: confighash %s", args)

	res = testtools.Run(t, dir, nil, nil, confighash, "diff", "--markdown", "--namespace", "argocd", "old.yaml", "keys.yaml")
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	assert.Equal(t, markdown+"\n", res.Stdout, "docs/diff.md's markdown block against diff --markdown without the image bump")
}

// anchors returns the anchors GitHub gives the headings of a Markdown
// page: lower case, punctuation dropped, spaces as hyphens, a repeated one
// numbered from -1.
func anchors(page string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	prose := fenced.ReplaceAllString(page, "")
	for _, m := range regexp.MustCompile(`(?m)^#+\s+(.+?)\s*$`).FindAllStringSubmatch(prose, -1) {
		a := strings.ReplaceAll(regexp.MustCompile(`[^\p{L}\p{N}_\- ]`).ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocLinksResolve: every relative link of README.md, docs/*.md and the
// examples' READMEs names a file or folder of the repository, and its
// #anchor a heading of the page it names.
func TestDocLinksResolve(t *testing.T) {
	root := testtools.RepoRoot(t)
	links := 0
	for _, page := range docPages(t, root) {
		for _, m := range regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(page.text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(link, "#")
			target := page.path
			if path != "" {
				target = filepath.Join(filepath.Dir(page.path), path)
			}
			if _, err := os.Stat(target); !assert.NoError(t, err, "%s links to %s", page.rel, link) || anchor == "" {
				continue
			}
			body, err := os.ReadFile(target)
			require.NoError(t, err)
			assert.True(t, anchors(string(body))[anchor], "%s links to %s: no heading of %s has the anchor #%s", page.rel, link, filepath.Base(target), anchor)
		}
	}
	t.Logf("%d relative links", links)
	assert.Greater(t, links, 20, "links found")
}

// TestLayoutNamesEveryFolder holds README.md's Layout table to the tree:
// every folder it names exists, and every folder with Go code is one it
// names or lies below one, so a new package cannot land without a row.
func TestLayoutNamesEveryFolder(t *testing.T) {
	root := testtools.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Layout\n")
	require.True(t, ok, "README.md has a Layout section")
	section, _, _ = strings.Cut(section, "\n## ")
	var named []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(first, -1) {
			folder := strings.TrimSuffix(m[1], "/")
			named = append(named, folder)
			info, err := os.Stat(filepath.Join(root, folder))
			if assert.NoError(t, err, "the Layout names %s", m[1]) {
				assert.True(t, info.IsDir(), "the Layout names %s, which is no folder", m[1])
			}
		}
	}
	require.Greater(t, len(named), 10, "folders the Layout names")
	covered := func(rel string) bool {
		for _, n := range named {
			if rel == n || strings.HasPrefix(rel, n+"/") {
				return true
			}
		}
		return false
	}
	folders := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone while walking: a test of another package cleaning up
		}
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel != "." && !folders[rel] {
			folders[rel] = true
			assert.True(t, covered(rel), "%s holds Go code and README.md's Layout names neither it nor a folder above it", rel)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, len(folders), 20, "folders with Go code")
}
