package controller_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/internal/testing/controlplane"
	"github.com/confighash/confighash/internal/testing/cptest"
)

// partition sits in the controller's HTTP transport and can cut it off from
// the apiserver: while cut, the streams in flight (open watches) end as if
// the server had closed them, and new requests are held until the
// partition heals, as on a network that drops packets. It counts requests
// by verb and resource, and the watch streams that end in 410 Gone.
type partition struct {
	mu      sync.Mutex
	healed  chan struct{} // nil when not cut
	next    int
	cancels map[int]context.CancelFunc
	counts  map[string]int
	held    map[string]int
	expired map[string]int
}

func newPartition() *partition {
	return &partition{cancels: map[int]context.CancelFunc{}, counts: map[string]int{}, held: map[string]int{}, expired: map[string]int{}}
}

func (p *partition) isCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.healed != nil
}

func (p *partition) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		p.mu.Lock()
		if healed := p.healed; healed != nil {
			p.held[requestKey(req)]++
			p.mu.Unlock()
			select {
			case <-healed:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
			p.mu.Lock()
		}
		p.counts[requestKey(req)]++
		id := p.next
		p.next++
		ctx, cancel := context.WithCancel(req.Context())
		p.cancels[id] = cancel
		p.mu.Unlock()
		resp, err := rt.RoundTrip(req.WithContext(ctx))
		if err != nil {
			p.done(id)
			return nil, err
		}
		if resp.StatusCode == http.StatusGone {
			p.mu.Lock()
			p.expired[requestKey(req)]++
			p.mu.Unlock()
		}
		resp.Body = &partitionedBody{ReadCloser: resp.Body, p: p, key: requestKey(req), done: func() { p.done(id) }}
		return resp, nil
	})
}

func (p *partition) done(id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cancel, ok := p.cancels[id]; ok {
		cancel()
		delete(p.cancels, id)
	}
}

// cutOff holds every new request and ends the ones in flight.
func (p *partition) cutOff() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.healed = make(chan struct{})
	for id, cancel := range p.cancels {
		cancel()
		delete(p.cancels, id)
	}
}

func (p *partition) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.healed)
	p.healed = nil
	p.counts = map[string]int{}
}

func (p *partition) snapshot(m map[string]int) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range m {
		if !strings.Contains(k, "events") && !strings.Contains(k, "leases") {
			out[k] = v
		}
	}
	return out
}

// expiredCount is the watch streams of key ("WATCH configmaps") that ended
// in 410 Gone; heldCount the requests of key held while cut.
func (p *partition) expiredCount(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.expired[key]
}

func (p *partition) heldCount(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[key]
}

// partitionedBody ends a stream cut by the partition with a clean end of
// file, as when the server closes a watch.
type partitionedBody struct {
	io.ReadCloser
	p    *partition
	key  string
	once sync.Once
	done func()
}

func (b *partitionedBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	// An expired watch is answered 200 with one ERROR event carrying a
	// Status of reason Expired (in JSON or protobuf, the string is there).
	if strings.HasPrefix(b.key, "WATCH ") && bytes.Contains(buf[:n], []byte("Expired")) {
		b.p.mu.Lock()
		b.p.expired[b.key]++
		b.p.mu.Unlock()
	}
	if err != nil && b.p.isCut() {
		err = io.EOF
	}
	return n, err
}

func (b *partitionedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// etcdRevision reads etcd's current revision through its JSON gateway.
func etcdRevision(t *testing.T, cp *controlplane.ControlPlane) int64 {
	t.Helper()
	var out struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	etcdPost(t, cp, "/v3/kv/range", map[string]any{"key": base64.StdEncoding.EncodeToString([]byte("/"))}, &out)
	rev, err := strconv.ParseInt(out.Header.Revision, 10, 64)
	require.NoError(t, err, "etcd revision %q", out.Header.Revision)
	return rev
}

// etcdCompact discards etcd's history before rev: a watch asked to resume
// from an older resourceVersion gets 410 Gone.
func etcdCompact(t *testing.T, cp *controlplane.ControlPlane, rev int64) {
	t.Helper()
	etcdPost(t, cp, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil)
}

func etcdPost(t *testing.T, cp *controlplane.ControlPlane, path string, body, out any) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := http.Post(cp.EtcdEndpoint()+path, "application/json", bytes.NewReader(raw))
	require.NoError(t, err, "etcd %s", path)
	defer func() { _ = resp.Body.Close() }()
	reply, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "etcd %s: %s", path, reply)
	if out != nil {
		require.NoError(t, json.Unmarshal(reply, out), "etcd %s: %s", path, reply)
	}
}

// TestFaultWatchExpiry expires the controller's watches: it is cut off from
// the apiserver, a consumed ConfigMap and Secret are edited, and etcd's
// history is compacted past everything the controller has seen, so its
// watches cannot resume (410 Gone) and it must list again. The apiserver
// runs without its watch cache, so resuming is answered from etcd's history
// and the expiry does not depend on the cache's size. Asserted: the watches
// were answered 410, no edit is missed, the edits roll the Deployment once
// or twice (never twice for one state), and a later edit is seen through
// the new watches and rolls once more.
//
// Slow (a control plane of its own and client-go's watch back-off): it runs
// only with CONFIGHASH_SLOW_TESTS=1.
func TestFaultWatchExpiry(t *testing.T) {
	if os.Getenv("CONFIGHASH_SLOW_TESTS") == "" {
		t.Skip("slow (about a minute): set CONFIGHASH_SLOW_TESTS=1 to run it")
	}
	cp := cptest.Private(t, controlplane.Options{APIServerArgs: []string{"--watch-cache=false"}})
	e := envOn(t, cp)
	net := newPartition()
	s := setupOn(t, e, func(o *controller.Options) {
		cfg := rest.CopyConfig(e.cfg)
		cfg.WrapTransport = net.wrap
		o.RESTConfig = cfg
	})

	// client-go takes a watch that ends within a second of starting, with
	// no event, as a failure and lists again instead of resuming: let the
	// watches be established a while, as in a long-running controller.
	started := time.Now()
	eventually(t, "the watches to run for two seconds", func(context.Context) (bool, error) {
		return time.Since(started) > 2*time.Second, nil
	})
	mark := s.ctrl.obs.mark()
	net.cutOff()
	cut := time.Now()
	t.Logf("cut at %s", cut.Format("15:04:05.000"))
	cmRV := s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "warn" })
	secRV := s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte("pw-2") })
	rev := etcdRevision(t, cp)
	etcdCompact(t, cp, rev)
	t.Logf("cut off; edited ConfigMap (rv %s) and Secret (rv %s); etcd compacted at revision %d", cmRV, secRV, rev)
	// Off for longer than the coalescing window, as a real partition would be.
	eventually(t, "the partition to last two coalescing windows", func(context.Context) (bool, error) {
		return time.Since(cut) > 2*testWindow, nil
	})
	net.heal()
	healed := time.Now()
	t.Logf("healed at %s", healed.Format("15:04:05.000"))

	synced, _ := s.ctrl.obs.waitFor(t, mark, "in sync having read both edits", func(o controller.Outcome) bool {
		return is("Deployment", "in_sync")(o) && o.ConfigVersions["ConfigMap/app-config"] == cmRV && o.ConfigVersions["Secret/db-creds"] == secRV
	})
	t.Logf("in sync with both edits %s after healing; requests since: %v; held while cut: %v; watches ended with 410 Gone: %v",
		time.Since(healed).Round(time.Millisecond), net.snapshot(net.counts), net.snapshot(net.held), net.snapshot(net.expired))
	// The watches were resumed from where they were cut, found their
	// history gone and were answered 410; the edits came through the
	// list that followed.
	for _, r := range []string{"WATCH configmaps", "WATCH secrets"} {
		assert.GreaterOrEqual(t, net.heldCount(r), 1, "%s resumed while cut off", r)
		assert.GreaterOrEqual(t, net.expiredCount(r), 1, "%s expired (410 Gone)", r)
	}
	s.assertFinal(synced)
	// The two informers relist independently: the edits roll once together,
	// or once each when the relists land more than a coalescing window
	// apart; never more, and never twice for one state.
	rollouts := s.rollouts()
	t.Logf("%d rollout(s) for the two edits", rollouts)
	assert.True(t, rollouts == 1 || rollouts == 2, "two edits made while the watches were expired gave %d rollouts", rollouts)
	assert.Equal(t, rollouts+1, s.deploymentRevision(), "Deployment revision")
	assert.Equal(t, rollouts, s.controllerRollouts(), "every rollout is the controller's")

	// The new watches deliver the next edit.
	mark = s.ctrl.obs.mark()
	cmRV = s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "error" })
	s.assertFinal(s.syncedAt(mark, "ConfigMap/app-config", cmRV))
	assert.Equal(t, rollouts+1, s.rollouts(), "one more edit, one more rollout")
	assert.Equal(t, rollouts+2, s.deploymentRevision(), "Deployment revision")
	assert.Equal(t, rollouts+1, s.controllerRollouts(), "every rollout is the controller's")
}
