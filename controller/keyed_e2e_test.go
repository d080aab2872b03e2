package controller_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/confighash/confighash/controller"
	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// The keyed mode as a team runs it: the key lives in a Kubernetes Secret,
// mounted as a file (the kubelet writes it behind ..data symlinks, with the
// final newline `kubectl create secret --from-file` keeps), and every render
// tool and the controller read it.

// pinSecret is the low-entropy value the keyed mode protects; no output
// or log may hold it.
const pinSecret = "pin-4711"

// teamKey is the key file's content: a non-breaking space is part of the
// key, the final newline is not.
const teamKey = "team key\u00a0with nbsp\n"

// secretVolume is a folder laid out as the kubelet lays out a Secret
// volume: the file hmac-key is a symlink to ..data/hmac-key, ..data a
// symlink to a timestamped folder, replaced atomically on an update.
type secretVolume struct {
	t   testing.TB
	dir string
	n   int
}

func newSecretVolume(t testing.TB, content string) *secretVolume {
	v := &secretVolume{t: t, dir: t.TempDir()}
	v.update(content)
	require.NoError(t, os.Symlink(filepath.Join("..data", "hmac-key"), v.path()))
	return v
}

// path is the key file's path, as the controller's --hmac-key-file names it.
func (v *secretVolume) path() string { return filepath.Join(v.dir, "hmac-key") }

// update writes content into a new timestamped folder and points ..data at
// it with a rename, as the kubelet does when the Secret changes.
func (v *secretVolume) update(content string) {
	v.n++
	ts := fmt.Sprintf("..2026_11_25_21_00_%02d.%d", v.n, v.n)
	require.NoError(v.t, os.Mkdir(filepath.Join(v.dir, ts), 0o750))
	require.NoError(v.t, os.WriteFile(filepath.Join(v.dir, ts, "hmac-key"), []byte(content), 0o400))
	tmp := filepath.Join(v.dir, "..data_tmp")
	require.NoError(v.t, os.Symlink(ts, tmp))
	require.NoError(v.t, os.Rename(tmp, filepath.Join(v.dir, "..data")))
}

var (
	hashLine  = regexp.MustCompile(`confighash\.dev/hash: "?(v1-[^"\s]+)"?`)
	keyIDLine = regexp.MustCompile(`confighash\.dev/key-id: "?([0-9a-f]+)"?`)
)

// keyedValues returns the hash and the key id a render wrote on its one
// workload.
func keyedValues(t *testing.T, what, out string) (hash, keyID string) {
	t.Helper()
	h, k := hashLine.FindAllStringSubmatch(out, -1), keyIDLine.FindAllStringSubmatch(out, -1)
	require.Len(t, h, 1, "%s: one hash\n%s", what, out)
	require.Len(t, k, 1, "%s: one key id\n%s", what, out)
	return h[0][1], k[0][1]
}

// applyKeyedRender applies the scenario's app rendered with the key in
// keyFile and waits for the controller's first in-sync outcome after mark
// that saw it; it returns that outcome and the render's hash.
func (s *scenario) applyKeyedRender(t *testing.T, mark int, what, keyFile string) (controller.Outcome, string) {
	t.Helper()
	rendered := render(t, s.stream(defaultApp(s.kind)), "--hmac-key-file", keyFile)
	hash, _ := keyedValues(t, what, rendered)
	require.NoError(t, s.apply(rendered, "kubectl"))
	o, _ := s.ctrl.obs.waitFor(t, mark, "in sync with "+what, func(o controller.Outcome) bool {
		return is(s.kind, "in_sync")(o) && o.Input.RawRenderHash == hash
	})
	return o, hash
}

// TestKeyedRendersAgree renders one app with the key of a Secret volume
// through kustomize (CONFIGHASH_HMAC_KEY_FILE, an absolute path, and
// CONFIGHASH_HMAC_KEY), Helm 3's --post-renderer and the Helm 4 plugin in
// homes of its own, and expects one hash and one key id from all of them.
// The controller binary, given the same key by --hmac-key-file (the
// symlink), $CONFIGHASH_HMAC_KEY_FILE and $CONFIGHASH_HMAC_KEY in turn,
// leaves the render alone and rolls an out-of-band edit once. No output
// and no log holds the key or the Secret's value.
func TestKeyedRendersAgree(t *testing.T) {
	e := newEnv(t)
	key := newSecretVolume(t, teamKey)
	bin := buildBinaries(t)
	confighash := filepath.Join(bin, "confighash")
	stream := e.stream(defaultApp("Deployment"))
	wantKeyID := hashing.KeyID([]byte(strings.TrimSuffix(teamKey, "\n")))

	kust := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(kust, "app.yaml"), []byte(stream), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(kust, "fn.yaml"), []byte(testtools.ExecFunctionConfig(confighash)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(kust, "kustomization.yaml"), []byte("resources: [app.yaml]\ntransformers: [fn.yaml]\n"), 0o600))
	chart := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(chart, "templates"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(chart, "templates", "app.yaml"), []byte(stream), 0o600))
	h3, h4 := testtools.NewHelm(t, 3), testtools.NewHelm(t, 4)
	h4.Env = append(h4.Env, "CONFIGHASH_BIN="+confighash)
	h4.InstallPlugin(t, filepath.Join(testtools.RepoRoot(t), "postrenderer", "plugin"))

	kustomize := testtools.Tool(t, "kustomize")
	fileEnv, keyEnv := []string{"CONFIGHASH_HMAC_KEY_FILE=" + key.path()}, []string{"CONFIGHASH_HMAC_KEY=" + teamKey}
	renders := map[string]testtools.Result{
		"kustomize, key file": testtools.Run(t, "", fileEnv, nil, kustomize, "build", "--enable-alpha-plugins", "--enable-exec", kust),
		"kustomize, key":      testtools.Run(t, "", keyEnv, nil, kustomize, "build", "--enable-alpha-plugins", "--enable-exec", kust),
		"helm3, key file":     h3.Run(t, fileEnv, "template", "web", chart, "-n", e.ns, "--post-renderer", confighash),
		"helm4, key":          h4.Run(t, keyEnv, "template", "web", chart, "-n", e.ns, "--post-renderer", "confighash"),
		"stream, flag":        testtools.Run(t, "", nil, []byte(stream), confighash, "--hmac-key-file", key.path()),
	}
	want, _ := keyedValues(t, "stream, flag", renders["stream, flag"].Stdout)
	require.True(t, strings.HasPrefix(want, hashing.KeyedPrefix), want)
	for what, res := range renders {
		require.Zero(t, res.ExitCode, "%s: %s", what, res.Stderr)
		hash, keyID := keyedValues(t, what, res.Stdout)
		assert.Equal(t, want, hash, what)
		assert.Equal(t, wantKeyID, keyID, what)
		assert.NotContains(t, res.Stdout+res.Stderr, "team key", what)
	}

	e.createSecret("db-creds", map[string]string{"password": pinSecret})
	require.NoError(t, e.apply(renders["kustomize, key file"].Stdout, "kubectl"))
	s := &scenario{env: e, kind: "Deployment"}
	for i, c := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{name: "--hmac-key-file", args: []string{"--hmac-key-file", key.path()}},
		{name: "$CONFIGHASH_HMAC_KEY_FILE", env: map[string]string{"CONFIGHASH_HMAC_KEY_FILE": key.path()}},
		{name: "$CONFIGHASH_HMAC_KEY", env: map[string]string{"CONFIGHASH_HMAC_KEY": teamKey}},
	} {
		// The process inherits the test's environment: this test is not
		// parallel, and the variables go with it.
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		p := e.startProcess(c.name, c.args...)
		e.waitMetric(p, "in sync", atLeast(1), "confighash_reconciles_total", `result="in_sync"`)
		require.Equal(t, i, s.rollouts(), "%s: the keyed render is the controller's, nothing rolls", c.name)
		require.NotContains(t, s.workloadAnnotations().meta["confighash.dev/external-baseline"], "ConfigMap/app-config",
			"%s: the in-stream configs are not external to it", c.name)
		inSync := p.metric("confighash_reconciles_total", `result="in_sync"`)
		e.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(fmt.Sprintf("%s-%d", pinSecret, i)) })
		e.waitMetric(p, "one roll", atLeast(1), "confighash_rollouts_total")
		e.waitMetric(p, "in sync after the roll", func(v float64) bool { return v > inSync }, "confighash_reconciles_total", `result="in_sync"`)
		assert.Equal(t, i+1, s.rollouts(), "%s: an out-of-band edit rolls once", c.name)
		assert.InDelta(t, 1, p.metric("confighash_rollouts_total"), 0, c.name)
		p.signal(syscall.SIGTERM)
		for _, secret := range []string{"team key", pinSecret} {
			assert.NotContains(t, p.Logs(), secret, c.name)
		}
		for k := range c.env {
			require.NoError(t, os.Unsetenv(k))
		}
	}
}

// TestKeyRotationWhileRunning rotates the key in the order docs/install.md
// gives, with the controller running on a Secret volume: the render made
// with the new key is applied while the controller still holds the old
// one (one rollout, the new pod template; the controller reads the new key
// id as another key's and adds none), the Secret is updated under the
// running controller (it reads its key at start only: nothing happens),
// and the restart with the new key adds no rollout either. A real edit
// afterwards rolls once.
func TestKeyRotationWhileRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := &scenario{env: e, kind: "Deployment"}
	vol := newSecretVolume(t, "the-old-key\n")
	dir := t.TempDir()
	newKey := filepath.Join(dir, "new")
	require.NoError(t, os.WriteFile(newKey, []byte("the-new-key\n"), 0o600))
	e.createSecret("db-creds", map[string]string{"password": pinSecret})
	opts := e.testOptions()
	opts.HMACKeyFile = vol.path()
	s.ctrl = e.start(opts)
	require.NoError(t, e.apply(render(t, e.stream(defaultApp("Deployment")), "--hmac-key-file", vol.path()), "kubectl"))
	s.ctrl.obs.waitFor(t, 0, "in sync", is("Deployment", "in_sync"))
	mark := s.ctrl.obs.mark()
	s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(pinSecret + "-2") })
	s.expectRoll(mark)
	require.Equal(t, 1, s.rollouts())

	// The render made with the new key, applied under the running controller.
	mark = s.ctrl.obs.mark()
	o, newHash := s.applyKeyedRender(t, mark, "the new render", newKey)
	assert.Empty(t, o.Input.RenderHash, "the new key's hash is unknown to the old key")
	assert.Equal(t, 2, s.rollouts(), "the new render's pod template, nothing of the controller's")
	assert.Zero(t, s.ctrl.obs.count(mark, is("Deployment", "rolled")))
	assert.Equal(t, 1, strings.Count(s.ctrl.logs.String(), "render-time hash made with another HMAC key"), "logged once")

	// The Secret is updated: the kubelet swaps ..data under the running
	// controller, which keeps the key it started with.
	vol.update("the-new-key\n")
	mark = s.ctrl.obs.mark()
	s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["UNUSED"] = "2" }) // consumed by no one: a reconcile, no roll
	o, _ = s.ctrl.obs.waitFor(t, mark, "in sync after the key file changed", is("Deployment", "in_sync"))
	assert.Empty(t, o.Input.RenderHash, "still the old key")
	assert.Equal(t, 2, s.rollouts())

	// The restart reads the new key.
	s.ctrl.stop(t)
	s.ctrl = e.start(opts)
	o, _ = s.ctrl.obs.waitFor(t, 0, "in sync under the new key", is("Deployment", "in_sync"))
	assert.Equal(t, newHash, o.Input.RenderHash)
	assert.Equal(t, o.Input.RenderHash, o.Input.LiveIn, "the new render's hash is the controller's")
	assert.Equal(t, 2, s.rollouts(), "no rollout of the controller's own for the rotation")
	assert.Zero(t, s.ctrl.obs.count(0, is("Deployment", "rolled")))

	mark = s.ctrl.obs.mark()
	s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(pinSecret + "-3") })
	s.expectRoll(mark)
	assert.Equal(t, 3, s.rollouts(), "a real edit still rolls, once")
	assert.NotContains(t, s.ctrl.logs.String(), pinSecret)
	assert.NotContains(t, s.ctrl.logs.String(), "the-new-key")
}

// TestKeyModeMismatch: a controller and a render that disagree on whether
// there is a key at all log it once per workload, naming the HMAC key and
// what to do, not as a hash of an unknown version. A controller without a
// key leaves a keyed render's workload alone: what it would record (an
// external baseline per config, a controller hash) are plain hashes, which
// for a Secret's low-entropy value are what the keyed mode keeps out of the
// workload. A keyed controller treats a plain render's configs as external
// (its records are keyed) and rolls an edit once. The key is in no log.
func TestKeyModeMismatch(t *testing.T) {
	dir := t.TempDir()
	keyFile, otherKeyFile := filepath.Join(dir, "key"), filepath.Join(dir, "other-key")
	require.NoError(t, os.WriteFile(keyFile, []byte(teamKey), 0o600))
	require.NoError(t, os.WriteFile(otherKeyFile, []byte("another team key\n"), 0o600))
	keyID, otherKeyID := hashing.KeyID([]byte(strings.TrimSpace(teamKey))), hashing.KeyID([]byte("another team key"))
	for _, c := range []struct {
		name                       string
		renderArgs                 []string
		controllerKey, want, event string
		leftAlone                  bool
	}{
		{name: "keyed render, controller without a key", renderArgs: []string{"--hmac-key-file", keyFile}, leftAlone: true,
			want: "render-time hash made with an HMAC key the controller was not given; leaving the workload alone, " +
				"as its records would hold plain hashes of the configs (give the controller the render's key with --hmac-key-file)",
			event: "the render-time hash was made with an HMAC key (key-id " + keyID + ") and the controller has none: " +
				"the workload is left alone until the controller is given the render's key"},
		{name: "plain render, keyed controller", controllerKey: keyFile,
			want: "render-time hash made without an HMAC key, and the controller has one; treating every config as external (render with the controller's key)",
			event: "the render-time hash was made without an HMAC key and the controller has one (key-id " + keyID + "): " +
				"every config is treated as external until the render uses the controller's key"},
		{name: "keyed render, controller with another key", renderArgs: []string{"--hmac-key-file", keyFile}, controllerKey: otherKeyFile,
			want: "render-time hash made with another HMAC key; treating every config as external (give the controller the render's key)",
			event: "the render-time hash was made with another HMAC key (key-id " + keyID + ", the controller's is " + otherKeyID + "): " +
				"every config is treated as external until the controller is given the render's key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := &scenario{env: e, kind: "Deployment"}
			e.createSecret("db-creds", map[string]string{"password": pinSecret})
			opts := e.testOptions()
			opts.HMACKeyFile = c.controllerKey
			s.ctrl = e.start(opts)
			require.NoError(t, e.apply(render(t, e.stream(defaultApp("Deployment")), c.renderArgs...), "kubectl"))
			first := "in_sync"
			if c.leftAlone {
				first = "unmanaged"
			}
			s.ctrl.obs.waitFor(t, 0, "the first reconcile", is("Deployment", first))
			mark := s.ctrl.obs.mark()
			s.editConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["LOG_LEVEL"] = "debug" })
			s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(pinSecret + "-2") })
			if c.leftAlone {
				s.ctrl.obs.waitFor(t, mark, "left alone after the edits", is("Deployment", "unmanaged"))
				assert.Zero(t, s.rollouts())
				a := s.workloadAnnotations()
				for k, v := range a.meta {
					assert.NotContains(t, v, hashing.PlainPrefix, "workload annotation %s", k)
				}
				for k, v := range a.template {
					assert.NotContains(t, v, hashing.PlainPrefix, "pod template annotation %s", k)
				}
				assert.Zero(t, s.ctrl.obs.count(0, func(o controller.Outcome) bool { return o.Result != "unmanaged" }))
			} else {
				s.expectRoll(mark)
				assert.Equal(t, 1, s.rollouts(), "nothing rolls for the mismatch, the edits once")
			}
			ev := e.waitEvent(workloadName, controller.EventReasonHMACKeyMismatch)
			assert.Equal(t, corev1.EventTypeWarning, ev.Type)
			assert.Equal(t, c.event, ev.Note)
			assert.Len(t, e.events(workloadName, controller.EventReasonHMACKeyMismatch), 1, "one Event per workload")
			logs := s.ctrl.logs.String()
			assert.Equal(t, 1, strings.Count(logs, c.want), "once per workload:\n%s", logs)
			assert.NotContains(t, logs, "unknown version")
			assert.NotContains(t, logs, "team key")
			assert.NotContains(t, logs, pinSecret)
		})
	}
}

// TestTurningKeyedModeOn follows docs/install.md's steps on a workload the
// plain mode managed, whose pod template carries the controller's plain
// hash from an out-of-band edit: the controller restarted with the key
// leaves the plain render alone (one rollout so far), the keyed render
// rolls once, and the next edit the controller rolls replaces its own
// plain record, after which the workload holds no plain hash.
func TestTurningKeyedModeOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := &scenario{env: e, kind: "Deployment"}
	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, []byte(teamKey), 0o600))
	e.createSecret("db-creds", map[string]string{"password": pinSecret})
	opts := e.testOptions()
	s.ctrl = e.start(opts)
	require.NoError(t, e.apply(render(t, e.stream(defaultApp("Deployment"))), "kubectl"))
	s.ctrl.obs.waitFor(t, 0, "in sync", is("Deployment", "in_sync"))
	mark := s.ctrl.obs.mark()
	s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(pinSecret + "-2") })
	s.expectRoll(mark)
	require.True(t, strings.HasPrefix(s.workloadAnnotations().template["confighash.dev/controller-hash"], hashing.PlainPrefix))

	// Step 2: the controller gets the key.
	s.ctrl.stop(t)
	opts.HMACKeyFile = keyFile
	s.ctrl = e.start(opts)
	s.ctrl.obs.waitFor(t, 0, "in sync under the key", is("Deployment", "in_sync"))
	assert.Equal(t, 1, s.rollouts(), "the plain render under the keyed controller")

	// Step 3: the keyed render.
	o, keyedHash := s.applyKeyedRender(t, s.ctrl.obs.mark(), "the keyed render", keyFile)
	assert.Equal(t, keyedHash, o.Input.RenderHash, "the keyed render's hash is known to the keyed controller")
	assert.Equal(t, o.Input.RenderHash, o.Input.LiveIn)
	assert.Equal(t, 2, s.rollouts(), "the keyed render's pod template")
	a := s.workloadAnnotations()
	assert.True(t, strings.HasPrefix(a.template["confighash.dev/controller-hash"], hashing.PlainPrefix),
		"the plain record stays on the pod template until the controller's next roll: %v", a.template)
	assert.NotContains(t, a.meta["confighash.dev/external-baseline"], hashing.PlainPrefix, "the baseline is recorded again, keyed")

	mark = s.ctrl.obs.mark()
	s.editSecret("db-creds", func(sec *corev1.Secret) { sec.Data["password"] = []byte(pinSecret + "-3") })
	s.expectRoll(mark)
	assert.Equal(t, 3, s.rollouts())
	a = s.workloadAnnotations()
	for k, v := range a.meta {
		assert.NotContains(t, v, hashing.PlainPrefix, "workload annotation %s", k)
	}
	for k, v := range a.template {
		assert.NotContains(t, v, hashing.PlainPrefix, "pod template annotation %s", k)
	}
}
