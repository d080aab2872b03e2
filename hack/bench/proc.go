package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// proc is one run of a process: its wall time, and its CPU time (user plus
// system, from the rusage wait4 returns, which includes the children it
// waited for, such as Helm's post-renderer).
type proc struct {
	wall, cpu time.Duration
}

// command is a process to time: argv, extra environment entries, and the
// file (or "") its standard input is read from.
type command struct {
	argv  []string
	env   []string
	stdin string
}

func (c command) String() string { return strings.Join(c.argv, " ") }

// run runs c once the way Helm 3 runs a post-renderer (pkg/postrender's
// execRender): standard input is a pipe that a goroutine of this process
// writes the file's bytes into, and standard output is a pipe read into a
// buffer. Standard error is kept for the error. Reading the file is not
// timed.
func (c command) run() (proc, error) {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Env = append(os.Environ(), c.env...)
	var input []byte
	if c.stdin != "" {
		b, err := os.ReadFile(c.stdin)
		if err != nil {
			return proc{}, err
		}
		input = b
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return proc{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	go func() {
		_, _ = stdin.Write(input) // a failed write shows as the command's error
		_ = stdin.Close()
	}()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return proc{}, fmt.Errorf("%s: %w: %s", c, err, stderr.Bytes())
	}
	return proc{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}, nil
}

// pairs runs a and b n times each, alternating the order pair by pair so a
// drift in the machine's load weighs on both, and returns the runs.
func pairs(a, b command, n int) (as, bs []proc, err error) {
	for i := 0; i < n; i++ {
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		p1, err := first.run()
		if err != nil {
			return nil, nil, err
		}
		p2, err := second.run()
		if err != nil {
			return nil, nil, err
		}
		if i%2 == 1 {
			p1, p2 = p2, p1
		}
		as, bs = append(as, p1), append(bs, p2)
	}
	return as, bs, nil
}

// median returns the median of the values f picks from runs.
func median(runs []proc, f func(proc) time.Duration) time.Duration {
	v := make([]time.Duration, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// medianRatio returns the median of b[i]/a[i] over the pairs.
func medianRatio(as, bs []proc, f func(proc) time.Duration) float64 {
	r := make([]float64, len(as))
	for i := range as {
		r[i] = float64(f(bs[i])) / float64(f(as[i]))
	}
	slices.Sort(r)
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}

func wall(p proc) time.Duration { return p.wall }
func cpu(p proc) time.Duration  { return p.cpu }

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
