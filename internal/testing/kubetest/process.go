package kubetest

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BuildCommands builds ./cmd/<name> of the module at root into dir, for
// each name.
func BuildCommands(root, dir string, names ...string) error {
	for _, name := range names {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./cmd/"+name)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/%s: %w\n%s", name, err, out)
		}
	}
	return nil
}

// FreeAddr returns a loopback address with a port free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// MetricsServing is what controller-runtime's manager logs once its
// metrics server listens: a confighash-controller process's ready text for
// StartServer (its health-probe address, if any, is bound before).
const MetricsServing = "Serving metrics server"

// pickAddr picks StartServer's addresses (a test's may differ).
var pickAddr = FreeAddr

// serverAttempts is how many addresses StartServer tries.
const serverAttempts = 5

// serveTimeout is how long StartServer waits for a process to be ready.
const serveTimeout = 2 * time.Minute

// StartServer starts path as StartProcess does, with the arguments args
// gives for a loopback address picked for it (args may pick more with
// FreeAddr), and returns the process and that address once the process's
// output holds ready (what it prints when it has bound its addresses), or
// it has exited. A port FreeAddr found free may be taken before the process
// binds it, by another process or as the local port of any outgoing
// connection; while the process exits saying so ("address already in
// use"), StartServer starts it again on a new address, up to five times.
// It reads the output, not the address: whoever took the port may answer
// there.
func StartServer(t testing.TB, name, path, ready string, args func(addr string) []string) (*Process, string) {
	t.Helper()
	var addr string
	p := WhileAddressTaken(t, name, func() (*Process, bool, string) {
		addr = pickAddr(t)
		p := StartProcess(t, name, path, args(addr)...)
		return p, p.await(t, ready), p.Logs()
	})
	return p, addr
}

// WhileAddressTaken calls start, which starts a server on newly picked
// addresses and says whether it became ready and what it printed, again
// while it was not ready and its output says an address was taken, up to
// five times in all; it returns the last server started.
func WhileAddressTaken[S any](t testing.TB, name string, start func() (server S, ready bool, logs string)) S {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s, ready, logs := start()
		if ready || !strings.Contains(logs, "address already in use") || attempt == serverAttempts {
			return s
		}
		t.Logf("%s: an address it was given was taken before it bound it; starting it again on others", name)
	}
}

// await polls the process's output until it holds ready (true) or the
// process exits (false); it fails the test after serveTimeout.
func (p *Process) await(t testing.TB, ready string) bool {
	t.Helper()
	deadline := time.NewTimer(serveTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if strings.Contains(p.Logs(), ready) {
			return true
		}
		select {
		case <-p.exited:
			return strings.Contains(p.Logs(), ready)
		case <-deadline.C:
			t.Fatalf("%s: did not print %q within %s", p.Name, ready, serveTimeout)
		case <-tick.C:
		}
	}
}

// Process is a command started by StartProcess.
type Process struct {
	// Name names the process in the test log.
	Name   string
	cmd    *exec.Cmd
	logs   *LockedBuffer
	exited chan struct{}
}

// StartProcess starts path with args, its stdout and stderr kept together.
// When the test ends the process is killed, and its output logged if the
// test failed.
func StartProcess(t testing.TB, name, path string, args ...string) *Process {
	t.Helper()
	p := &Process{Name: name, cmd: exec.Command(path, args...), logs: &LockedBuffer{}, exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.Signal(syscall.SIGKILL)
		if t.Failed() {
			t.Logf("%s logs:\n%s", p.Name, p.Logs())
		}
	})
	return p
}

// Signal sends sig and waits for the process to exit, killing it after 30
// seconds.
func (p *Process) Signal(sig syscall.Signal) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Logs returns what the process printed so far.
func (p *Process) Logs() string { return p.logs.String() }

// LockedBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends b.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
