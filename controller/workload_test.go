package controller

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/confighash/confighash/hashing"
)

const plain = "v1-sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
const keyedHash = "v1-hmac-sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// podTemplate consumes key LOG_LEVEL of ConfigMap app, all of Secret db, and
// optionally ConfigMap extra.
func podTemplate(ann map[string]string) *corev1.PodTemplateSpec {
	optional := true
	t := &corev1.PodTemplateSpec{}
	t.Annotations = ann
	t.Spec.Containers = []corev1.Container{{
		Name: "app",
		Env: []corev1.EnvVar{{Name: "LOG_LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "LOG_LEVEL"}}}},
		EnvFrom: []corev1.EnvFromSource{
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}, Optional: &optional}},
		},
	}}
	return t
}

func TestInspect(t *testing.T) {
	k := newKeys("")
	all := []string{"ConfigMap/app", "ConfigMap/extra", "Secret/db"}
	tests := []struct {
		name         string
		meta, tmpl   map[string]string
		keyID        string // the controller's; empty without a key
		wantManaged  bool
		wantUses     []string
		wantExternal []string
		wantRender   string
		wantMismatch hashing.Mismatch
		wantOtherKey string
	}{
		{name: "no annotation: not managed"},
		{name: "render hash: managed, nothing external", tmpl: map[string]string{k.hash: plain},
			wantManaged: true, wantUses: all, wantRender: plain},
		{name: "render hash and external list", tmpl: map[string]string{k.hash: plain}, meta: map[string]string{k.external: "Secret/db, ConfigMap/extra"},
			wantManaged: true, wantUses: all, wantExternal: []string{"ConfigMap/extra", "Secret/db"}, wantRender: plain},
		{name: "external list only: all external", meta: map[string]string{k.external: "Secret/db"},
			wantManaged: true, wantUses: all, wantExternal: all},
		{name: "opted out wins", tmpl: map[string]string{k.hash: plain}, meta: map[string]string{k.enabled: "false", WaveAnnotation: "true"}},
		{name: "enabled: true", meta: map[string]string{k.enabled: "true"}, wantManaged: true, wantUses: all, wantExternal: all},
		{name: "Wave", meta: map[string]string{WaveAnnotation: "true"}, wantManaged: true, wantUses: all, wantExternal: all},
		{name: "Wave false", meta: map[string]string{WaveAnnotation: "false"}},
		{name: "Reloader auto", meta: map[string]string{ReloaderAutoAnnotation: "true"}, wantManaged: true, wantUses: all, wantExternal: all},
		{name: "Reloader configmap auto: ConfigMaps only", meta: map[string]string{ReloaderCMAutoAnnotation: "true"},
			wantManaged: true, wantUses: []string{"ConfigMap/app", "ConfigMap/extra"}, wantExternal: []string{"ConfigMap/app", "ConfigMap/extra"}},
		{name: "Reloader named: consumed ones keep their keys, others become whole-object uses",
			meta:        map[string]string{ReloaderCMReloadAnnotation: "app,feature-flags", ReloaderSecReloadAnnotation: "tls"},
			wantManaged: true, wantUses: []string{"ConfigMap/app", "ConfigMap/feature-flags", "Secret/tls"},
			wantExternal: []string{"ConfigMap/app", "ConfigMap/feature-flags", "Secret/tls"}},
		{name: "Reloader named with namespaces: this one's kept, another's dropped",
			meta:        map[string]string{ReloaderCMReloadAnnotation: "shop/feature-flags,aws-observability/aws-logging"},
			wantManaged: true, wantUses: []string{"ConfigMap/feature-flags"}, wantExternal: []string{"ConfigMap/feature-flags"}},
		{name: "Reloader named next to a render hash: the extra ones are external",
			tmpl: map[string]string{k.hash: plain}, meta: map[string]string{ReloaderSecReloadAnnotation: "tls"},
			wantManaged: true, wantUses: []string{"ConfigMap/app", "ConfigMap/extra", "Secret/db", "Secret/tls"},
			wantExternal: []string{"Secret/tls"}, wantRender: plain},
		{name: "keyed render hash, plain controller: unknown", tmpl: map[string]string{k.hash: keyedHash},
			wantManaged: true, wantUses: all, wantExternal: all, wantMismatch: hashing.MismatchKeyed},
		{name: "keyed render hash without a key id, keyed controller", tmpl: map[string]string{k.hash: keyedHash}, keyID: "00112233aabbccdd",
			wantManaged: true, wantUses: all, wantRender: keyedHash},
		{name: "keyed render hash, the controller's key", tmpl: map[string]string{k.hash: keyedHash, k.keyID: "00112233aabbccdd"},
			keyID: "00112233aabbccdd", wantManaged: true, wantUses: all, wantRender: keyedHash},
		{name: "keyed render hash, another key: unknown", tmpl: map[string]string{k.hash: keyedHash, k.keyID: "ffeeddccbbaa9988"},
			keyID: "00112233aabbccdd", wantManaged: true, wantUses: all, wantExternal: all, wantMismatch: hashing.MismatchOtherKey, wantOtherKey: "ffeeddccbbaa9988"},
		{name: "plain render hash, keyed controller: unknown", tmpl: map[string]string{k.hash: plain}, keyID: "00112233aabbccdd",
			wantManaged: true, wantUses: all, wantExternal: all, wantMismatch: hashing.MismatchUnkeyed},
		{name: "unknown version", tmpl: map[string]string{k.hash: "v2-sha3:00"},
			wantManaged: true, wantUses: all, wantExternal: all, wantMismatch: hashing.MismatchUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := inspect("shop", tt.meta, podTemplate(tt.tmpl), k, tt.keyID)
			assert.Equal(t, tt.wantManaged, v.Managed, "managed")
			if !tt.wantManaged {
				return
			}
			assert.Equal(t, tt.wantUses, refs(v.Uses), "uses")
			var ext []string
			for _, u := range v.Uses {
				if v.External[u.Ref()] {
					ext = append(ext, u.Ref())
				}
			}
			assert.Equal(t, tt.wantExternal, ext, "external")
			assert.Equal(t, tt.wantRender, v.RenderHash, "render hash")
			assert.Equal(t, tt.wantMismatch, v.Mismatch, "mismatch")
			assert.Equal(t, tt.wantOtherKey, v.OtherKeyID, "other key id")
		})
	}
}

func TestInspectKeepsKeyPrecision(t *testing.T) {
	v := inspect("shop", map[string]string{ReloaderCMReloadAnnotation: "app"}, podTemplate(nil), newKeys(""), "")
	assert.Equal(t, []hashing.Use{{Kind: hashing.KindConfigMap, Name: "app", Keys: []string{"LOG_LEVEL"}}}, v.Uses)
}

func TestCustomPrefix(t *testing.T) {
	k := newKeys("example.com")
	assert.Equal(t, "example.com/hash", k.hash)
	assert.False(t, inspect("shop", nil, podTemplate(map[string]string{"confighash.dev/hash": plain}), k, "").Managed)
	assert.True(t, inspect("shop", nil, podTemplate(map[string]string{"example.com/hash": plain}), k, "").Managed)
	// Inspect, which kubectl confighash status calls, takes the prefix itself.
	assert.False(t, Inspect("shop", nil, podTemplate(map[string]string{"confighash.dev/hash": plain}), "example.com", "").Managed)
	assert.True(t, Inspect("shop", nil, podTemplate(map[string]string{"example.com/hash": plain}), "example.com", "").Managed)
	assert.True(t, Inspect("shop", nil, podTemplate(map[string]string{"confighash.dev/hash": plain}), "", "").Managed, "empty: the default prefix")
}

func TestRollMessage(t *testing.T) {
	uses := []hashing.Use{
		{Kind: hashing.KindConfigMap, Name: "app-config", Keys: []string{"LOG_LEVEL"}},
		{Kind: hashing.KindSecret, Name: "db", All: true},
	}
	changes := []Change{
		{Kind: hashing.KindConfigMap, Namespace: "shop", Name: "app-config", Op: OpChanged, Keys: []string{"LOG_LEVEL", "UNUSED"}},
		{Kind: hashing.KindConfigMap, Namespace: "shop", Name: "other", Op: OpChanged, Keys: []string{"X"}},
		{Kind: hashing.KindSecret, Namespace: "shop", Name: "db", Op: OpChanged, Keys: []string{"password", "user"}},
	}
	d := Decision{Action: ActionRoll, Reason: ReasonRenderMismatch}
	assert.Equal(t, "Secret shop/db keys password, user changed; ConfigMap shop/app-config key LOG_LEVEL changed; rolling",
		rollMessage(changes, uses, d, "shop"))
	assert.Equal(t, "ConfigMap shop/app-config key LOG_LEVEL changed; rolling", rollMessage(changes[:1], uses, d, "shop"))
	assert.Equal(t, "consumed config differs from the render-time hash; rolling", rollMessage(nil, uses, d, "shop"))
	d = Decision{Action: ActionRoll, Reason: ReasonExternalChanged, Changed: []string{"Secret/db"}}
	assert.Equal(t, "Secret shop/db changed; rolling", rollMessage(changes[1:2], uses, d, "shop"))
	assert.Equal(t, "ConfigMap shop/app-config created; rolling",
		rollMessage([]Change{{Kind: hashing.KindConfigMap, Namespace: "shop", Name: "app-config", Op: OpCreated}}, uses, d, "shop"))
}

// TestUsesPrint: the fingerprint tells apart what changes the hashes the
// controller records (which configs, whole or which keys), and nothing
// else (the order the pod spec lists them in, optional).
func TestUsesPrint(t *testing.T) {
	base := []hashing.Use{
		{Kind: hashing.KindConfigMap, Name: "app", Keys: []string{"A"}},
		{Kind: hashing.KindSecret, Name: "db", All: true},
	}
	with := func(f func(u []hashing.Use) []hashing.Use) []hashing.Use {
		u := []hashing.Use{base[0], base[1]}
		u[0].Keys = append([]string(nil), base[0].Keys...)
		return f(u)
	}
	for _, c := range []struct {
		name string
		uses []hashing.Use
		same bool
	}{
		{"reordered", with(func(u []hashing.Use) []hashing.Use { return []hashing.Use{u[1], u[0]} }), true},
		{"optional", with(func(u []hashing.Use) []hashing.Use { u[1].Optional = true; return u }), true},
		{"repeated key", with(func(u []hashing.Use) []hashing.Use { u[0].Keys = []string{"A", "A"}; return u }), true},
		{"another key", with(func(u []hashing.Use) []hashing.Use { u[0].Keys = []string{"A", "B"}; return u }), false},
		{"whole instead of a key", with(func(u []hashing.Use) []hashing.Use { u[0].All, u[0].Keys = true, nil; return u }), false},
		{"renamed", with(func(u []hashing.Use) []hashing.Use { u[0].Name = "app-v2"; return u }), false},
		{"other kind", with(func(u []hashing.Use) []hashing.Use { u[1].Kind = hashing.KindConfigMap; return u }), false},
		{"one fewer", base[:1], false},
		{"none", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := UsesPrint(c.uses)
			assert.Len(t, got, 16)
			if c.same {
				assert.Equal(t, UsesPrint(base), got)
			} else {
				assert.NotEqual(t, UsesPrint(base), got)
			}
		})
	}
}

// refs returns the Kind/name of each use, sorted.
func refs(uses []hashing.Use) []string {
	out := make([]string, len(uses))
	for i, u := range uses {
		out[i] = u.Ref()
	}
	sort.Strings(out)
	return out
}
