package kubetest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveEnv, when set, makes this test binary a server on the address it
// holds ("fail": exit at once), as StartServer's processes are.
const serveEnv = "KUBETEST_SERVE"

func TestMain(m *testing.M) {
	switch addr := os.Getenv(serveEnv); addr {
	case "":
		os.Exit(m.Run())
	case "fail":
		fmt.Println("refusing to start")
		os.Exit(1)
	default:
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Println(err) // "…: bind: address already in use"
			os.Exit(1)
		}
		fmt.Println("serving on", addr)
		_ = http.Serve(l, http.NotFoundHandler())
		os.Exit(1)
	}
}

// TestStartServerAddressTaken: a process given an address taken before it
// binds it is started again on another, and StartServer returns once it
// says it serves there, not when the address answers (whoever holds it may
// answer: here the taker serves HTTP too).
func TestStartServerAddressTaken(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = http.Serve(busy, http.NotFoundHandler()) }()
	defer func() { _ = busy.Close() }()
	picks := []string{busy.Addr().String(), busy.Addr().String()}
	pickAddr = func(t testing.TB) string {
		if len(picks) == 0 {
			return FreeAddr(t)
		}
		a := picks[0]
		picks = picks[1:]
		return a
	}
	t.Cleanup(func() { pickAddr = FreeAddr })

	var given []string
	p, addr := StartServer(t, "server", os.Args[0], "serving on", func(addr string) []string {
		given = append(given, addr)
		t.Setenv(serveEnv, addr)
		return nil
	})
	require.Len(t, given, 3, "two taken addresses, then a free one")
	assert.Equal(t, given[2], addr)
	assert.NotEqual(t, busy.Addr().String(), addr)
	resp, err := http.Get("http://" + addr + "/")
	require.NoError(t, err, "the process serves on the address returned")
	_ = resp.Body.Close()
	assert.NotContains(t, p.Logs(), "address already in use", "the returned process is the one that bound")
}

// TestStartServerOtherExit: a process that exits for another reason is
// returned at once, not started again.
func TestStartServerOtherExit(t *testing.T) {
	starts := 0
	p, _ := StartServer(t, "failing", os.Args[0], "serving on", func(string) []string {
		starts++
		t.Setenv(serveEnv, "fail")
		return nil
	})
	assert.Equal(t, 1, starts)
	assert.Contains(t, p.Logs(), "refusing to start")
}

// TestStartServerRetriesBounded: an address taken every time is tried
// serverAttempts times, and the last process is returned, its logs saying
// why.
func TestStartServerRetriesBounded(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = busy.Close() }()
	pickAddr = func(testing.TB) string { return busy.Addr().String() }
	t.Cleanup(func() { pickAddr = FreeAddr })
	starts := 0
	p, _ := StartServer(t, "always-taken", os.Args[0], "serving on", func(addr string) []string {
		starts++
		t.Setenv(serveEnv, addr)
		return nil
	})
	assert.Equal(t, serverAttempts, starts)
	assert.Contains(t, p.Logs(), "address already in use")
}
