package controller

import (
	"testing"

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
