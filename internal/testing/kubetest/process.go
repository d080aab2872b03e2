package kubetest

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
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
