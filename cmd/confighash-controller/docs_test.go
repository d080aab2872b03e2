package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// helpFlag is a flag in the usage: "  -name type" or "  -name", its usage
// on the next line, ending "(default X)" when the default is not the zero
// value.
var (
	helpFlag    = regexp.MustCompile(`(?m)^  -([a-z0-9-]+)(?: \w+)?\n\s+(.*)$`)
	helpDefault = regexp.MustCompile(`\(default "?([^")]*)"?\)$`)
)

// docRow is a row of the flags table of docs/controller.md: flags, default.
var docRow = regexp.MustCompile("(?m)^\\| (`--[^|]*) \\| ([^|]*) \\|")

// TestHelpMatchesDocs runs the built command with -h and compares its flags
// with the table of docs/controller.md (Flags): every flag it has is
// documented, every documented flag exists, and where the table gives plain
// values for the defaults, one per flag of the row, they are the defaults
// -h prints.
func TestHelpMatchesDocs(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "confighash-controller")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var help bytes.Buffer
	cmd := exec.Command(bin, "-h")
	cmd.Stdout = &help
	require.NoError(t, cmd.Run())
	defaults := map[string]string{}
	for _, m := range helpFlag.FindAllStringSubmatch(help.String(), -1) {
		def := ""
		if d := helpDefault.FindStringSubmatch(m[2]); d != nil {
			def = d[1]
		}
		defaults[m[1]] = def
	}
	require.Contains(t, defaults, "coalesce-window", "the usage lists the flags:\n%s", help.String())

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "controller.md"))
	require.NoError(t, err)
	documented := map[string]bool{}
	rows := docRow.FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, rows, "docs/controller.md has a table of flags")
	for _, row := range rows {
		names := docFlags(row[1])
		for _, name := range names {
			documented[name] = true
			assert.Contains(t, defaults, name, "docs/controller.md documents --%s, which -h does not list", name)
		}
		values := strings.Split(row[2], ", ")
		if len(values) != len(names) {
			continue
		}
		for i, v := range values {
			v = strings.Trim(strings.TrimSpace(v), "`")
			if strings.ContainsAny(v, "$ (") || slices.Contains([]string{"off", "all", "in-cluster"}, v) {
				continue // described, not a value
			}
			got := defaults[names[i]]
			if got == "" && v == "false" {
				got = "false" // -h prints no default for a false bool
			}
			assert.Equal(t, v, got, "default of --%s: docs/controller.md against -h", names[i])
		}
	}
	for name := range defaults {
		assert.True(t, documented[name], "-h lists -%s, which docs/controller.md's table of flags does not", name)
	}
}

// docFlags reads the flags of a table cell: "`--a`, `--b`", where "`-c`"
// after "`--x-y`" abbreviates "--x-c".
func docFlags(cell string) []string {
	var names []string
	for _, f := range strings.Split(cell, ",") {
		f = strings.Trim(strings.TrimSpace(f), "`")
		switch {
		case strings.HasPrefix(f, "--"):
			names = append(names, strings.TrimPrefix(f, "--"))
		case strings.HasPrefix(f, "-") && len(names) > 0:
			first := names[0]
			cut := strings.LastIndex(first, "-")
			for cut > 0 && strings.Count(first[cut:], "-") < strings.Count(f, "-") {
				cut = strings.LastIndex(first[:cut], "-")
			}
			names = append(names, first[:cut]+f)
		}
	}
	return names
}
