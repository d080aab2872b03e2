package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// logTailLines is how many lines of a component's log are included in
// errors about that component.
const logTailLines = 40

// process is one control plane component run as a child process. It can be
// started again after it was stopped, with the same arguments.
type process struct {
	name    string
	path    string
	args    []string
	logPath string
	logTee  io.Writer // optional extra destination for the output

	mu      sync.Mutex
	cmd     *exec.Cmd
	logFile *os.File
	exited  chan struct{} // closed when the current run has exited
	waitErr error         // valid after exited is closed
}

// start launches the process, appending its output to the log file.
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.name)
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%s: open log: %w", p.name, err)
	}
	fmt.Fprintf(logFile, "=== %s starting at %s: %s %s\n", p.name,
		time.Now().Format(time.RFC3339), p.path, strings.Join(p.args, " "))
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = p.output(logFile), p.output(logFile)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("%s: start %s: %w", p.name, p.path, err)
	}
	p.cmd, p.logFile, p.exited = cmd, logFile, make(chan struct{})
	go p.wait(cmd, p.exited)
	return nil
}

// output returns the writer for the process's stdout and stderr. A plain
// *os.File is passed directly so no copying goroutine is needed.
func (p *process) output(logFile *os.File) io.Writer {
	if p.logTee == nil {
		return logFile
	}
	return io.MultiWriter(logFile, p.logTee)
}

// wait reaps the process and records how it exited.
func (p *process) wait(cmd *exec.Cmd, exited chan struct{}) {
	err := cmd.Wait()
	p.mu.Lock()
	p.waitErr = err
	p.mu.Unlock()
	close(exited)
}

// exitedChan returns the exit channel of the current run, or nil when the
// process was never started or has been stopped.
func (p *process) exitedChan() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// exitError describes why the process exited; call after exited is closed.
func (p *process) exitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waitErr == nil {
		return fmt.Errorf("%s exited with status 0", p.name)
	}
	return fmt.Errorf("%s exited: %w", p.name, p.waitErr)
}

// stop terminates the process group: SIGTERM, then SIGKILL after timeout.
// Stopping a process that is not running is a no-op.
func (p *process) stop(timeout time.Duration) error {
	p.mu.Lock()
	cmd, exited, logFile := p.cmd, p.exited, p.logFile
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	terminate(cmd)
	var err error
	select {
	case <-exited:
	case <-time.After(timeout):
		kill(cmd)
		<-exited
		err = fmt.Errorf("%s: did not exit within %s of SIGTERM, killed", p.name, timeout)
	}
	p.mu.Lock()
	p.cmd, p.exited, p.logFile = nil, nil, nil
	p.mu.Unlock()
	_ = logFile.Close()
	return err
}

// tail returns the last lines of the process's log file.
func (p *process) tail() string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.logPath, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// withTail wraps err with the component name, its log path and log tail.
func (p *process) withTail(err error) error {
	return fmt.Errorf("%s: %w\n--- last lines of %s ---\n%s\n---", p.name, err, p.logPath, p.tail())
}

// errExited is returned while waiting for readiness when the process died.
var errExited = errors.New("process exited before becoming ready")
