package controlplane

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestStartPicking: etcd and kube-apiserver, whose ports envtest picks,
// are started again on new ports while their log says an address was
// taken, and only then; a component with kept ports is started once. The
// start is a function that writes to the component's log as the real
// binaries do (TestStartPicksAgainWhenAPortIsTaken runs them).
func TestStartPicking(t *testing.T) {
	taken := "listen tcp 127.0.0.1:4242: bind: address already in use\n"
	tests := []struct {
		name        string
		logs        []string // what each start writes; "" succeeds
		keep        bool     // no repick: ports fixed or kept
		wantErr     bool
		wantStarts  int
		wantRepicks int
	}{
		{name: "ready at once", logs: []string{""}, wantStarts: 1},
		{name: "taken, then ready", logs: []string{taken, ""}, wantStarts: 2, wantRepicks: 1},
		{name: "taken every time", logs: []string{taken, taken, taken, taken}, wantErr: true, wantStarts: portAttempts, wantRepicks: portAttempts - 1},
		{name: "another failure", logs: []string{"no such file\n", ""}, wantErr: true, wantStarts: 1},
		{name: "taken, then another failure", logs: []string{taken, "no such file\n", ""}, wantErr: true, wantStarts: 2, wantRepicks: 1},
		{name: "kept ports, taken", logs: []string{taken, ""}, keep: true, wantErr: true, wantStarts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := &ControlPlane{logDir: t.TempDir()}
			logPath := filepath.Join(cp.logDir, "etcd.log")
			// An earlier start's failure in the same log is not this one's.
			if err := os.WriteFile(logPath, []byte(taken), 0o600); err != nil {
				t.Fatal(err)
			}
			starts, repicks := 0, 0
			start := func() error {
				out := tt.logs[starts]
				starts++
				if out == "" {
					return nil
				}
				f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					return err
				}
				defer func() { _ = f.Close() }()
				if _, err := f.WriteString(out); err != nil {
					return err
				}
				return errors.New("stopped unexpectedly before becoming ready")
			}
			repick := func() { repicks++ }
			if tt.keep {
				repick = nil
			}
			err := cp.startPicking("etcd", start, repick)
			if (err != nil) != tt.wantErr {
				t.Errorf("error: %v, want one: %v", err, tt.wantErr)
			}
			if starts != tt.wantStarts || repicks != tt.wantRepicks {
				t.Errorf("%d starts and %d repicks, want %d and %d", starts, repicks, tt.wantStarts, tt.wantRepicks)
			}
		})
	}
}
