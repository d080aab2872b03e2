package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// emptyProgram is the floor for start-up: a Go program that does nothing,
// built in the same run with the same toolchain.
const emptyProgram = "package main\n\nfunc main() {}\n"

// startup times bin/confighash on empty input (the cost Helm pays per call
// before any byte is read) against an empty Go program, and sums the
// package initialisers GODEBUG=inittrace=1 reports.
// tmp is a scratch directory of its own.
func startup(tmp, bin string, n int) error {
	src := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(src, []byte(emptyProgram), 0o644); err != nil {
		return err
	}
	empty := filepath.Join(tmp, "empty")
	build := exec.Command("go", "build", "-trimpath", "-o", empty, src)
	build.Dir = tmp
	build.Env = append(os.Environ(), "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the empty program: %w: %s", err, out)
	}
	floor := command{argv: []string{empty}, stdin: os.DevNull}
	ch := command{argv: []string{bin}, stdin: os.DevNull}
	fs, cs, err := pairs(floor, ch, n)
	if err != nil {
		return err
	}
	fmt.Printf("start-up, %d runs each alternated (means):\n", n)
	fmt.Printf("  %-44s wall %6.2f ms  CPU %6.2f ms\n", "floor: empty Go program", ms(mean(fs, wall)), ms(mean(fs, cpu)))
	fmt.Printf("  %-44s wall %6.2f ms  CPU %6.2f ms\n", "confighash < /dev/null", ms(mean(cs, wall)), ms(mean(cs, cpu)))

	var total time.Duration
	perPkg := map[string]time.Duration{}
	for i := 0; i < n; i++ {
		t, pkgs, err := inittrace(bin)
		if err != nil {
			return err
		}
		total += t
		for p, d := range pkgs {
			perPkg[p] += d
		}
	}
	type pkgTime struct {
		pkg string
		d   time.Duration
	}
	var top []pkgTime
	for p, d := range perPkg {
		top = append(top, pkgTime{p, d})
	}
	sort.Slice(top, func(i, j int) bool { return top[i].d > top[j].d })
	fmt.Printf("  %-44s %6.2f ms (GODEBUG=inittrace=1, mean of %d runs; %d packages)\n", "package initialisers, clock", ms(total/time.Duration(n)), n, len(perPkg))
	for _, p := range top[:min(3, len(top))] {
		fmt.Printf("    %-60s %5.2f ms\n", p.pkg, ms(p.d/time.Duration(n)))
	}
	return nil
}

// inittrace runs bin once with GODEBUG=inittrace=1 and returns the clock
// time of its package initialisers, in all and per package.
func inittrace(bin string) (time.Duration, map[string]time.Duration, error) {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	cmd.Stdin = bytes.NewReader(nil)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, nil, fmt.Errorf("%s with GODEBUG=inittrace=1: %w: %s", bin, err, stderr.Bytes())
	}
	var total time.Duration
	pkgs := map[string]time.Duration{}
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init <package> @<start> ms, <clock> ms clock, <bytes> bytes, <allocs> allocs
		f := strings.Fields(sc.Text())
		if len(f) < 7 || f[0] != "init" || f[6] != "clock," {
			continue
		}
		v, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			return 0, nil, fmt.Errorf("inittrace line %q: %w", sc.Text(), err)
		}
		d := time.Duration(v * 1e6)
		total += d
		pkgs[f[1]] += d
	}
	return total, pkgs, nil
}

func mean(runs []proc, f func(proc) time.Duration) time.Duration {
	var t time.Duration
	for _, r := range runs {
		t += f(r)
	}
	return t / time.Duration(len(runs))
}
