package controlplane

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestControllerManagerPortTaken: a free port found for kube-controller-
// manager can be taken by another process before it binds it (CI saw a
// parallel test's control plane do so). start then tries another port; a
// port fixed by Options is not changed, and the error says it was taken.
// The process is a script that fails to bind the taken port as the real
// binary does, and fails otherwise for another reason.
func TestControllerManagerPortTaken(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "kube-controller-manager")
	script := `#!/bin/sh
for arg; do
  case "$arg" in
    --secure-port=4242) echo 'failed to listen on 127.0.0.1:4242: bind: address already in use' >&2; exit 1 ;;
  esac
done
echo 'no kubeconfig' >&2
exit 1
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil { //nolint:gosec // an executable script
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		fixed     int
		ports     []int
		wantTaken bool
		wantPorts int
	}{
		{name: "taken, then another", ports: []int{4242, 5353}, wantTaken: false, wantPorts: 2},
		{name: "taken every time", ports: []int{4242, 4242, 4242, 4242}, wantTaken: true, wantPorts: portAttempts},
		{name: "fixed and taken", fixed: 4242, wantTaken: true, wantPorts: 0},
		{name: "free, other failure", ports: []int{5353}, wantTaken: false, wantPorts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			picked := 0
			m := &controllerManager{path: fake, fixedPort: tt.fixed, out: &nopWriter{}, stopTimeout: time.Second,
				pickPort: func() (int, error) { picked++; return tt.ports[picked-1], nil }}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := m.start(ctx)
			if err == nil {
				t.Fatal("the fake process started")
			}
			if got := errors.Is(err, errPortTaken); got != tt.wantTaken {
				t.Errorf("port taken: %v, want %v (%v)", got, tt.wantTaken, err)
			}
			if picked != tt.wantPorts {
				t.Errorf("picked %d ports, want %d", picked, tt.wantPorts)
			}
			if m.cancel != nil {
				t.Error("a failed start left the run as if it were running")
			}
		})
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
