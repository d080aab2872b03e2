package controller

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/confighash/confighash/hashing"
)

// content is a config of one key, password (and LOG_LEVEL, for ConfigMap
// app's key use), holding value.
func content(value string) hashing.Content {
	d := hashing.DigestOf([]byte(value))
	return hashing.Content{Keys: map[string]hashing.Digest{"password": d, "LOG_LEVEL": d}}
}

// TestNoteFirstSeen is the watch handler's narrow decision: which config
// events make a workload remember the config's hash from before the event
// (the content its pods run) in place of a baseline not written yet.
// podTemplate consumes ConfigMap app (key LOG_LEVEL), Secret db (all) and
// the optional ConfigMap extra.
func TestNoteFirstSeen(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	opts := DefaultOptions()
	// The cache the handler reads the workload's other configs from: a
	// fake reader, for this one narrow decision. ConfigMap app holds the
	// key LOG_LEVEL the pods require; Secret db is read whole.
	app := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"LOG_LEVEL": "info"}}
	db := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Data: map[string][]byte{"password": []byte("pw")}}
	cache := func(objs ...client.Object) client.Reader { return fake.NewClientBuilder().WithObjects(objs...).Build() }
	r := newReconciler(cache(app, db), nil, nil, builtinKinds(), m, opts, logr.Discard())
	deployment := r.kinds["Deployment"]
	k := r.keys
	v1 := state{content: content("one"), version: "10", found: true}
	v2 := state{content: content("two"), version: "11", found: true}
	absent := state{}
	// Secret db as a ServiceAccount token Secret, before and after the
	// token controller filled it in.
	token := func(version, value string) state {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", ResourceVersion: version}, Type: corev1.SecretTypeServiceAccountToken}
		if value != "" {
			s.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(value), "ca.crt": []byte("ca"), "namespace": []byte("ns")}
		}
		return stateOf(s)
	}
	pending, filled := token("20", ""), token("21", "t1")
	req := Request{Kind: "Deployment", Namespace: "ns", Name: "web"}
	obj := func(meta map[string]string, tmpl map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: meta},
			Spec: appsv1.DeploymentSpec{Template: *podTemplate(tmpl)}}
	}
	enabled := map[string]string{k.enabled: "true"}
	baselined := map[string]string{k.enabled: "true", k.baseline: "Secret/db=" + plain}
	hashOf := func(ref string, s state) string {
		v := r.view(req, obj(enabled, nil), podTemplate(nil))
		return r.externalHashes("ns", v, ref, func(hashing.Kind, string) (hashing.Content, bool) { return s.content, s.found })[ref]
	}
	tests := []struct {
		name    string
		meta    map[string]string
		tmpl    map[string]string
		ref     string
		tr      transition
		written string // the version a baseline of ref was written from
		// cache is what the cache holds of the other configs (both,
		// when nil).
		cache []client.Object
		want  map[string]string
	}{
		{name: "no baseline yet: the content before the edit", meta: enabled, ref: "Secret/db",
			tr: transition{before: v1, after: v2}, want: map[string]string{"Secret/db": hashOf("Secret/db", v1)}},
		{name: "baseline recorded before the edit: nothing to remember", meta: baselined, ref: "Secret/db",
			tr: transition{before: v1, after: v2}},
		{name: "baseline written from the edited version: it absorbed the edit", meta: baselined, ref: "Secret/db",
			tr: transition{before: v1, after: v2}, written: "11", want: map[string]string{"Secret/db": hashOf("Secret/db", v1)}},
		{name: "baseline written from an earlier version: not absorbed", meta: baselined, ref: "Secret/db",
			tr: transition{before: v1, after: v2}, written: "10"},
		{name: "in-stream config: the render-time hash covers it", meta: map[string]string{k.external: "Secret/db"},
			tmpl: map[string]string{k.hash: plain}, ref: "ConfigMap/app", tr: transition{before: v1, after: v2}},
		{name: "required config created: pods could not start without it", meta: enabled, ref: "Secret/db",
			tr: transition{before: absent, after: v1}},
		{name: "optional config created: pods run without it", meta: enabled, ref: "ConfigMap/extra",
			tr: transition{before: absent, after: v1}, want: map[string]string{"ConfigMap/extra": hashOf("ConfigMap/extra", absent)}},
		{name: "deleted: the content before", meta: enabled, ref: "Secret/db",
			tr: transition{before: v1, after: absent}, want: map[string]string{"Secret/db": hashOf("Secret/db", v1)}},
		{name: "opted out: nothing", meta: map[string]string{k.enabled: "false"}, ref: "Secret/db",
			tr: transition{before: v1, after: v2}},
		{name: "token Secret filled in: pods could not start on it before", meta: enabled, ref: "Secret/db",
			tr: transition{before: pending, after: filled}},
		{name: "token Secret lost its token: the token before", meta: enabled, ref: "Secret/db",
			tr: transition{before: filled, after: pending}, want: map[string]string{"Secret/db": hashOf("Secret/db", filled)}},
		{name: "optional config created while a required one is missing: no pod could start", meta: enabled, ref: "ConfigMap/extra",
			tr: transition{before: absent, after: v1}, cache: []client.Object{app}},
		{name: "required config edited while another lacks the key the pods require: no pod could start", meta: enabled, ref: "Secret/db",
			tr: transition{before: v1, after: v2}, cache: []client.Object{&corev1.ConfigMap{ObjectMeta: app.ObjectMeta, Data: map[string]string{"OTHER": "x"}}, db}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r.memory = newMemory()
			r.reader = cache(app, db)
			if tc.cache != nil {
				r.reader = cache(tc.cache...)
			}
			if tc.written != "" {
				r.memory.with(req, func(e *entry) { e.written = map[string]string{tc.ref: tc.written} })
			}
			r.noteEvent(t.Context(), req, deployment, obj(tc.meta, tc.tmpl), tc.ref, Change{}, tc.tr)
			assert.Equal(t, tc.want, r.memory.firstSeen(req))
			assert.Empty(t, r.memory.takeWritten(req, tc.ref), "the written version is used once")
		})
	}

	t.Run("the first observation wins", func(t *testing.T) {
		r.memory, r.reader = newMemory(), cache(app, db)
		v3 := state{content: content("three"), version: "12", found: true}
		r.noteEvent(t.Context(), req, deployment, obj(enabled, nil), "Secret/db", Change{}, transition{before: v1, after: v2})
		r.noteEvent(t.Context(), req, deployment, obj(enabled, nil), "Secret/db", Change{}, transition{before: v2, after: v3})
		assert.Equal(t, map[string]string{"Secret/db": hashOf("Secret/db", v1)}, r.memory.firstSeen(req))
	})
}

// TestNoteLost is the watch handler's other narrow decision: a config the
// pods require that goes missing while nothing else they require is missing
// leaves pods running without it, so the changes seen until it is back are
// remembered as changes to what they run (the first-seen hashes), not taken
// for the first content of pods that never started. podTemplate requires
// key LOG_LEVEL of ConfigMap app and Secret db.
func TestNoteLost(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	app := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"LOG_LEVEL": "info"}}
	db := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Data: map[string][]byte{"password": []byte("pw")}}
	cache := func(objs ...client.Object) client.Reader { return fake.NewClientBuilder().WithObjects(objs...).Build() }
	r := newReconciler(cache(), nil, nil, builtinKinds(), m, DefaultOptions(), logr.Discard())
	deployment := r.kinds["Deployment"]
	req := Request{Kind: "Deployment", Namespace: "ns", Name: "web"}
	enabled := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: map[string]string{r.keys.enabled: "true"}},
		Spec: appsv1.DeploymentSpec{Template: *podTemplate(nil)}}
	absent := state{}
	noKey := stateOf(&corev1.ConfigMap{ObjectMeta: app.ObjectMeta, Data: map[string]string{"OTHER": "x"}})
	edited := stateOf(&corev1.ConfigMap{ObjectMeta: app.ObjectMeta, Data: map[string]string{"LOG_LEVEL": "debug"}})
	type step struct {
		ref   string
		tr    transition
		cache []client.Object // the cache after the event
	}
	tests := []struct {
		name      string
		steps     []step
		wantLost  map[string]bool
		wantFirst []string // the refs with a first-seen hash
		wantBack  []string // the refs created again under running pods
	}{
		{name: "required Secret deleted under running pods, ConfigMap edited: both remembered",
			steps: []step{
				{ref: "Secret/db", tr: transition{before: stateOf(db), after: absent}, cache: []client.Object{app}},
				{ref: "ConfigMap/app", tr: transition{before: stateOf(app), after: edited}, cache: []client.Object{app}},
			},
			wantLost: map[string]bool{"Secret/db": true}, wantFirst: []string{"ConfigMap/app", "Secret/db"}},
		{name: "required key removed under running pods: lost as a deletion is",
			steps: []step{
				{ref: "ConfigMap/app", tr: transition{before: stateOf(app), after: noKey}, cache: []client.Object{db}},
			},
			wantLost: map[string]bool{"ConfigMap/app": true}, wantFirst: []string{"ConfigMap/app"}},
		{name: "the Secret back: forgotten",
			steps: []step{
				{ref: "Secret/db", tr: transition{before: stateOf(db), after: absent}, cache: []client.Object{app}},
				{ref: "Secret/db", tr: transition{before: absent, after: stateOf(db)}, cache: []client.Object{app, db}},
			},
			wantFirst: []string{"Secret/db"}, wantBack: []string{"Secret/db"}},
		{name: "deleted while another required config is missing: no pod ran, nothing lost",
			steps: []step{
				{ref: "Secret/db", tr: transition{before: stateOf(db), after: absent}, cache: nil},
				{ref: "ConfigMap/app", tr: transition{before: absent, after: stateOf(app)}, cache: []client.Object{app}},
				{ref: "ConfigMap/app", tr: transition{before: stateOf(app), after: edited}, cache: []client.Object{app}},
			}},
		{name: "both deleted under running pods, one after the other: both lost",
			steps: []step{
				{ref: "Secret/db", tr: transition{before: stateOf(db), after: absent}, cache: []client.Object{app}},
				{ref: "ConfigMap/app", tr: transition{before: stateOf(app), after: absent}, cache: nil},
			},
			wantLost: map[string]bool{"ConfigMap/app": true, "Secret/db": true}, wantFirst: []string{"ConfigMap/app", "Secret/db"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r.memory = newMemory()
			for _, s := range tc.steps {
				r.reader = cache(s.cache...)
				r.noteEvent(t.Context(), req, deployment, enabled, s.ref, Change{}, s.tr)
			}
			assert.Equal(t, tc.wantLost, r.memory.lost(req))
			assert.Equal(t, tc.wantBack, slices.Sorted(maps.Keys(r.memory.back(req))), "created again under running pods")
			assert.ElementsMatch(t, tc.wantFirst, slices.Collect(maps.Keys(r.memory.firstSeen(req))))
		})
	}

	t.Run("a new render: its pods have not run, nothing is lost", func(t *testing.T) {
		r.memory, r.reader = newMemory(), cache(app)
		r.noteEvent(t.Context(), req, deployment, enabled, "Secret/db", Change{}, transition{before: stateOf(db), after: absent})
		require.Equal(t, map[string]bool{"Secret/db": true}, r.memory.lost(req))
		r.memory.noteRender(req, plain, "30")
		assert.Nil(t, r.memory.lost(req))
	})
}

// TestExpireBack: a creation remembered as back under running pods goes
// once its time is up and no mismatch is pending, and the entry with it.
func TestExpireBack(t *testing.T) {
	req := Request{Kind: "Deployment", Namespace: "ns", Name: "web"}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	until := now.Add(15 * time.Second)
	m := newMemory()
	assert.True(t, m.expireBack(req, now).IsZero(), "nothing remembered")
	m.noteLost(req, "Secret/db")
	m.noteBack(req, "Secret/db", now, until)
	assert.Equal(t, until, m.expireBack(req, now), "before its time")
	m.with(req, func(e *entry) { e.firstMismatch = now })
	assert.True(t, m.expireBack(req, until).IsZero(), "a mismatch pending: its reconcile comes back")
	assert.NotNil(t, m.back(req), "kept while a mismatch is pending")
	m.with(req, func(e *entry) { e.settle() })
	assert.True(t, m.expireBack(req, until).IsZero(), "its time up")
	assert.Nil(t, m.back(req))
	assert.Empty(t, m.entries, "the entry goes with it")
}
