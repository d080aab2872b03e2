// Package cptest gives tests a local control plane (package controlplane):
// one shared by a test package, or a private one for a test that restarts
// components. Without the binaries a test skips with a message, or fails
// when CONFIGHASH_REQUIRE_CONTROLPLANE is set (as .ci/run does).
package cptest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/confighash/confighash/internal/testing/controlplane"
)

// RequireEnv makes missing binaries a test failure instead of a skip.
const RequireEnv = "CONFIGHASH_REQUIRE_CONTROLPLANE"

// startTimeout bounds starting a control plane on a busy machine.
const startTimeout = 3 * time.Minute

var shared struct {
	once sync.Once
	cp   *controlplane.ControlPlane
	err  error
}

// Require skips the test when the control plane binaries are absent, or
// fails it when RequireEnv is set.
func Require(t testing.TB) {
	t.Helper()
	err := controlplane.CheckBinaries("")
	if err == nil {
		return
	}
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s is set but the control plane is unavailable: %v", RequireEnv, err)
	}
	t.Skipf("skipping: control plane binaries not found (%v); run `make controlplane`, or point %s (or envtest's %s) at them; set %s=1 to make this a failure",
		err, controlplane.BinDirEnv, controlplane.AssetsEnv, RequireEnv)
}

// Shared returns the control plane shared by the test package, starting it
// on first use, with opts when given (extra users, say): the options of the
// call that starts it count, so a test package passes the same ones
// everywhere. Call StopShared from TestMain to stop it.
func Shared(t testing.TB, opts ...controlplane.Options) *controlplane.ControlPlane {
	t.Helper()
	Require(t)
	shared.once.Do(func() {
		shared.cp, shared.err = start(opts)
		if shared.err == nil {
			t.Logf("control plane ready: %+v (logs in %s)", shared.cp.Timings(), shared.cp.LogDir())
		}
	})
	if shared.err != nil {
		t.Fatalf("start the shared control plane: %v", shared.err)
	}
	return shared.cp
}

// Private starts a control plane for one test, with opts when given (extra
// component flags, say), and stops it when the test ends: for tests that
// stop or restart components.
func Private(t testing.TB, opts ...controlplane.Options) *controlplane.ControlPlane {
	t.Helper()
	Require(t)
	cp, err := start(opts)
	if err != nil {
		t.Fatalf("start a private control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop the private control plane: %v", err)
		}
	})
	return cp
}

// start starts a control plane with the options given (at most one),
// within startTimeout.
func start(opts []controlplane.Options) (*controlplane.ControlPlane, error) {
	if len(opts) > 1 {
		return nil, fmt.Errorf("cptest: %d sets of options given, at most one is read", len(opts))
	}
	var o controlplane.Options
	if len(opts) == 1 {
		o = opts[0]
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return controlplane.Start(ctx, o)
}

// Run runs the test package's tests, then stops the shared control plane
// if one was started (a failure to stop it fails the run), and returns the
// exit code: func TestMain(m *testing.M) { os.Exit(cptest.Run(m)) }.
func Run(m *testing.M) int {
	code := m.Run()
	if err := StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}

// StopShared stops the shared control plane, if one was started; call it
// from TestMain after m.Run (Run does).
func StopShared() error {
	if shared.cp == nil {
		return nil
	}
	if err := shared.cp.Stop(); err != nil {
		return fmt.Errorf("stop the shared control plane: %w", err)
	}
	return nil
}
