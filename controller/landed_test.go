package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/confighash/confighash/hashing"
)

// TestLanded: which optional external configs landed together with the
// pods that read them (created with the workload or with a config the pods
// require), so that a record of their absence describes no pod. podTemplate
// reads ConfigMap app (key LOG_LEVEL) and Secret db, which the pods
// require, and the optional ConfigMap extra.
func TestLanded(t *testing.T) {
	now := time.Unix(1795000000, 0)
	ago := func(s int) time.Time { return now.Add(-time.Duration(s) * time.Second) }
	external := Inspect("shop", map[string]string{"confighash.dev/enabled": "true"}, podTemplate(nil), "", "")
	inStream := Inspect("shop", map[string]string{"confighash.dev/external": "Secret/db"}, podTemplate(map[string]string{"confighash.dev/hash": plain}), "", "")
	absent := func(key []byte) string {
		use := hashing.Use{Kind: hashing.KindConfigMap, Name: "extra", All: true, Optional: true}
		none := func(hashing.Kind, string) (hashing.Content, bool) { return hashing.Content{}, false }
		return hashing.Compute("shop", []hashing.Use{use}, none, hashing.Options{Key: key})
	}
	tests := []struct {
		name     string
		view     View
		workload time.Time
		configs  map[string]time.Time
		key      []byte
		want     map[string]string
	}{
		{name: "created in the second a required config was", view: external, workload: ago(60),
			configs: map[string]time.Time{"ConfigMap/app": ago(60), "Secret/db": now, "ConfigMap/extra": now},
			want:    map[string]string{"ConfigMap/extra": absent(nil)}},
		{name: "created before a required config", view: external, workload: ago(60),
			configs: map[string]time.Time{"ConfigMap/app": ago(60), "Secret/db": now.Add(5 * time.Second), "ConfigMap/extra": now},
			want:    map[string]string{"ConfigMap/extra": absent(nil)}},
		{name: "created in the second the workload was", view: external, workload: now,
			configs: map[string]time.Time{"ConfigMap/app": ago(60), "Secret/db": ago(60), "ConfigMap/extra": now},
			want:    map[string]string{"ConfigMap/extra": absent(nil)}},
		{name: "created the second after the workload", view: external, workload: ago(1),
			configs: map[string]time.Time{"ConfigMap/app": ago(60), "Secret/db": ago(60), "ConfigMap/extra": now},
			want:    map[string]string{"ConfigMap/extra": absent(nil)}},
		{name: "created two seconds after the workload and its configs: pods could run without it", view: external, workload: ago(2),
			configs: map[string]time.Time{"ConfigMap/app": ago(2), "Secret/db": ago(2), "ConfigMap/extra": now}},
		{name: "an HMAC key: the keyed hash of its absence", view: external, workload: now, key: []byte("k"),
			configs: map[string]time.Time{"ConfigMap/app": ago(60), "Secret/db": ago(60), "ConfigMap/extra": now},
			want:    map[string]string{"ConfigMap/extra": absent([]byte("k"))}},
		{name: "in the render: its hash covers it", view: inStream, workload: now,
			configs: map[string]time.Time{"ConfigMap/app": now, "Secret/db": now, "ConfigMap/extra": now}},
		{name: "required configs are not recorded absent", view: external, workload: now,
			configs: map[string]time.Time{"ConfigMap/app": now, "Secret/db": now}},
		{name: "creation times unknown", view: external,
			configs: map[string]time.Time{"ConfigMap/app": {}, "Secret/db": {}, "ConfigMap/extra": {}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Landed("shop", tc.view, tc.workload, tc.configs, tc.key))
		})
	}
}
