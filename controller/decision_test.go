package controller_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/confighash/confighash/controller"
)

// Hash values for the tables: h(x) is a plain value, k(x) a keyed one.
func h(x string) string { return "v1-sha256:" + x }
func k(x string) string { return "v1-hmac-sha256:" + x }

func TestDecide(t *testing.T) {
	tests := []struct {
		name string
		in   controller.Input
		want controller.Decision
	}{
		{
			name: "required config missing: blocked, nothing written",
			in:   controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), LiveIn: h("x"), LiveAll: h("x"), Missing: []string{"Secret/b", "ConfigMap/a"}},
			want: controller.Decision{Action: controller.ActionBlocked, Reason: controller.ReasonMissing, Missing: []string{"ConfigMap/a", "Secret/b"}},
		},
		{
			name: "first apply of a render: in sync",
			in:   controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), LiveIn: h("r"), LiveAll: h("all")},
			want: controller.Decision{Action: controller.ActionNone, Reason: controller.ReasonInSync},
		},
		{
			name: "first apply with an external config: baseline recorded, no roll",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), LiveIn: h("r"), LiveAll: h("all"),
				LiveExternal: map[string]string{"Secret/db": h("db1")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonNewExternal,
				Record: controller.Record{Baseline: "Secret/db=" + h("db1")}},
		},
		{
			name: "in-stream config edited out of band: roll",
			in:   controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), LiveIn: h("r2"), LiveAll: h("all2")},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonRenderMismatch,
				Record: controller.Record{ControllerHash: h("all2"), ControllerBase: h("r")}},
		},
		{
			name: "external config edited: roll, baseline moves",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), LiveIn: h("r"), LiveAll: h("all2"),
				Baseline: map[string]string{"Secret/db": h("db1")}, LiveExternal: map[string]string{"Secret/db": h("db2")}},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonExternalChanged, Changed: []string{"Secret/db"},
				Record: controller.Record{ControllerHash: h("all2"), ControllerBase: h("r"), Baseline: "Secret/db=" + h("db2")}},
		},
		{
			name: "keyed: the baseline and the controller hash carry the key id",
			in: controller.Input{RenderHash: k("r"), RawRenderHash: k("r"), LiveIn: k("r"), LiveAll: k("all2"), KeyID: "id-a", BaselineKeyID: "id-a",
				Baseline: map[string]string{"Secret/db": k("db1")}, LiveExternal: map[string]string{"Secret/db": k("db2")}},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonExternalChanged, Changed: []string{"Secret/db"},
				Record: controller.Record{ControllerHash: k("all2"), ControllerBase: k("r"), Baseline: "key-id=id-a,Secret/db=" + k("db2"), KeyID: "id-a"}},
		},
		{
			name: "key rotated: a baseline made under the old key is recorded again, no roll",
			in: controller.Input{RenderHash: k("r"), RawRenderHash: k("r"), LiveIn: k("r"), LiveAll: k("all"), KeyID: "id-b", BaselineKeyID: "id-a",
				Baseline: map[string]string{"Secret/db": k("db-under-a")}, LiveExternal: map[string]string{"Secret/db": k("db-under-b")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonNewExternal,
				Record: controller.Record{Baseline: "key-id=id-b,Secret/db=" + k("db-under-b")}},
		},
		{
			name: "key rotated: a controller hash made under the old key is unknown, no roll",
			in: controller.Input{ControllerHash: k("all-under-a"), ControllerBase: controller.NoRenderHash, ControllerKeyID: "id-a",
				LiveAll: k("all-under-b"), KeyID: "id-b", BaselineKeyID: "id-b",
				Baseline: map[string]string{"Secret/db": k("db")}, LiveExternal: map[string]string{"Secret/db": k("db")}},
			want: controller.Decision{Action: controller.ActionNone, Reason: controller.ReasonInSync},
		},
		{
			name: "start-up: an external config edited before its first baseline rolls against the content first seen",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), LiveIn: h("r"), LiveAll: h("all2"),
				FirstSeen: map[string]string{"Secret/db": h("db1")}, LiveExternal: map[string]string{"Secret/db": h("db2")}},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonExternalChanged, Changed: []string{"Secret/db"},
				Record: controller.Record{ControllerHash: h("all2"), ControllerBase: h("r"), Baseline: "Secret/db=" + h("db2")}},
		},
		{
			name: "start-up: edited back to what was first seen: baseline recorded, no roll",
			in: controller.Input{LiveAll: h("all"), FirstSeen: map[string]string{"Secret/db": h("db1")},
				LiveExternal: map[string]string{"Secret/db": h("db1")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonNewExternal,
				Record: controller.Record{Baseline: "Secret/db=" + h("db1")}},
		},
		{
			name: "start-up: a baseline that absorbed the edit gives way to the first seen content",
			in: controller.Input{LiveAll: h("all2"), Baseline: map[string]string{"Secret/db": h("db2")},
				FirstSeen: map[string]string{"Secret/db": h("db1")}, LiveExternal: map[string]string{"Secret/db": h("db2")}},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonExternalChanged, Changed: []string{"Secret/db"},
				Record: controller.Record{ControllerHash: h("all2"), ControllerBase: controller.NoRenderHash, Baseline: "Secret/db=" + h("db2")}},
		},
		{
			name: "start-up: a baseline of another mode gives way to the first seen content",
			in: controller.Input{LiveAll: h("all2"), Baseline: map[string]string{"Secret/db": k("db")},
				FirstSeen: map[string]string{"Secret/db": h("db1")}, LiveExternal: map[string]string{"Secret/db": h("db2")}},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonExternalChanged, Changed: []string{"Secret/db"},
				Record: controller.Record{ControllerHash: h("all2"), ControllerBase: controller.NoRenderHash, Baseline: "Secret/db=" + h("db2")}},
		},
		{
			name: "start-up: the first seen content of one config, none of another: roll, both recorded",
			in: controller.Input{LiveAll: h("all2"), FirstSeen: map[string]string{"Secret/db": h("db1")},
				LiveExternal: map[string]string{"Secret/db": h("db2"), "ConfigMap/env": h("env1")}},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonExternalChanged, Changed: []string{"Secret/db"},
				Record: controller.Record{ControllerHash: h("all2"), ControllerBase: controller.NoRenderHash, Baseline: "ConfigMap/env=" + h("env1") + ",Secret/db=" + h("db2")}},
		},
		{
			name: "after a roll, pods reflect the controller hash even though the render hash is stale",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), ControllerHash: h("all2"), ControllerBase: h("r"),
				LiveIn: h("r2"), LiveAll: h("all2")},
			want: controller.Decision{Action: controller.ActionNone, Reason: controller.ReasonInSync},
		},
		{
			name: "after a roll, another edit: roll again",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), ControllerHash: h("all2"), ControllerBase: h("r"),
				LiveIn: h("r3"), LiveAll: h("all3")},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonChangedSinceRoll,
				Record: controller.Record{ControllerHash: h("all3"), ControllerBase: h("r")}},
		},
		{
			name: "after a roll, the config edited back to the render: roll back",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), ControllerHash: h("all2"), ControllerBase: h("r"),
				LiveIn: h("r"), LiveAll: h("all")},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonChangedSinceRoll,
				Record: controller.Record{ControllerHash: h("all"), ControllerBase: h("r")}},
		},
		{
			name: "the render rolled under applied again after a later one (helm rollback), seen after the last change: roll (the record is on the template; a record elsewhere would leave a later roll to the recorded content writing nothing new)",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), ControllerHash: h("all2"), ControllerBase: h("r"),
				LiveIn: h("r"), LiveAll: h("all"), RenderStarted: true},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonChangedSinceRoll,
				Record: controller.Record{ControllerHash: h("all"), ControllerBase: h("r")}},
		},
		{
			name: "new render applied after a controller roll: the render wins, the old record is ignored",
			in: controller.Input{RenderHash: h("rNew"), RawRenderHash: h("rNew"), ControllerHash: h("all2"), ControllerBase: h("r"),
				LiveIn: h("rNew"), LiveAll: h("all3")},
			want: controller.Decision{Action: controller.ActionNone, Reason: controller.ReasonInSync},
		},
		{
			name: "new render applied before its ConfigMap (S2, either order): mismatch until the ConfigMap lands",
			in:   controller.Input{RenderHash: h("rNew"), RawRenderHash: h("rNew"), LiveIn: h("r"), LiveAll: h("all")},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonRenderMismatch,
				Record: controller.Record{ControllerHash: h("all"), ControllerBase: h("rNew")}},
		},
		{
			name: "no render hash (Reloader/Wave opt-in): everything external, recorded first",
			in: controller.Input{LiveIn: h("empty"), LiveAll: h("all"),
				LiveExternal: map[string]string{"ConfigMap/a": h("a1"), "Secret/b": h("b1")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonNewExternal,
				Record: controller.Record{Baseline: "ConfigMap/a=" + h("a1") + ",Secret/b=" + h("b1")}},
		},
		{
			name: "no render hash, controller rolled before: base none matches",
			in: controller.Input{ControllerHash: h("all"), ControllerBase: controller.NoRenderHash, LiveIn: h("empty"), LiveAll: h("all"),
				LiveExternal: map[string]string{"ConfigMap/a": h("a1")}},
			want: controller.Decision{Action: controller.ActionNone, Reason: controller.ReasonInSync},
		},
		{
			name: "a new external reference (render added it): recorded, not rolled",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), LiveIn: h("r"), LiveAll: h("all"),
				Baseline:     map[string]string{"Secret/db": h("db1")},
				LiveExternal: map[string]string{"Secret/db": h("db1"), "Secret/new": h("n1")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonNewExternal,
				Record: controller.Record{Baseline: "Secret/db=" + h("db1") + ",Secret/new=" + h("n1")}},
		},
		{
			name: "a record of the other mode (key switched on) is unknown, not changed",
			in: controller.Input{RenderHash: k("r"), RawRenderHash: k("r"), ControllerHash: h("all"), ControllerBase: k("r"),
				LiveIn: k("r"), LiveAll: k("all"), Baseline: map[string]string{"Secret/db": h("db1")},
				LiveExternal: map[string]string{"Secret/db": k("db1")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonNewExternal,
				Record: controller.Record{Baseline: "Secret/db=" + k("db1")}},
		},
		{
			name: "a render hash of an unknown version: compared as absent, the raw value is the base",
			in: controller.Input{RawRenderHash: "v9-blake3:abc", LiveIn: h("empty"), LiveAll: h("all"),
				Baseline: map[string]string{"ConfigMap/a": h("a1")}, LiveExternal: map[string]string{"ConfigMap/a": h("a2")}},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonExternalChanged, Changed: []string{"ConfigMap/a"},
				Record: controller.Record{ControllerHash: h("all"), ControllerBase: "v9-blake3:abc", Baseline: "ConfigMap/a=" + h("a2")}},
		},
		{
			name: "a render that named no namespace: its hash is compared with the live content hashed so",
			in:   controller.Input{RenderHash: h("r-no-ns"), RawRenderHash: h("r-no-ns"), LiveIn: h("r"), LiveInUnnamespaced: h("r-no-ns"), LiveAll: h("all")},
			want: controller.Decision{Action: controller.ActionNone, Reason: controller.ReasonInSync},
		},
		{
			name: "a render that named no namespace, config edited since: roll",
			in:   controller.Input{RenderHash: h("r-no-ns"), RawRenderHash: h("r-no-ns"), LiveIn: h("r2"), LiveInUnnamespaced: h("r2-no-ns"), LiveAll: h("all2")},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonRenderMismatch,
				Record: controller.Record{ControllerHash: h("all2"), ControllerBase: h("r-no-ns")}},
		},
		{
			name: "the pod spec consumes more of an external config (baseline under other uses): recorded again, not rolled",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), LiveIn: h("r"), LiveAll: h("all2"), Uses: "u2",
				Baseline: map[string]string{"Secret/db": h("db1")}, BaselineUses: "u1", LiveExternal: map[string]string{"Secret/db": h("db1+user")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonNewExternal,
				Record: controller.Record{Baseline: "uses=u2,Secret/db=" + h("db1+user")}},
		},
		{
			name: "a baseline made before uses were recorded is compared as it is",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), LiveIn: h("r"), LiveAll: h("all2"), Uses: "u2",
				Baseline: map[string]string{"Secret/db": h("db1")}, LiveExternal: map[string]string{"Secret/db": h("db2")}},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonExternalChanged, Changed: []string{"Secret/db"},
				Record: controller.Record{ControllerHash: h("all2"), ControllerBase: h("r"), Baseline: "uses=u2,Secret/db=" + h("db2"), Uses: "u2"}},
		},
		{
			name: "after a roll, the pod spec consumes more: the controller hash is unknown, the render and baselines decide",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), ControllerHash: h("all2"), ControllerBase: h("r"), ControllerUses: "u1",
				LiveIn: h("r"), LiveAll: h("all3"), Uses: "u2",
				Baseline: map[string]string{"Secret/db": h("db2")}, BaselineUses: "u1", LiveExternal: map[string]string{"Secret/db": h("db2+user")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonNewExternal,
				Record: controller.Record{Baseline: "uses=u2,Secret/db=" + h("db2+user")}},
		},
		{
			name: "after a roll and a change of uses, a real edit rolls",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), ControllerHash: h("all2"), ControllerBase: h("r"), ControllerUses: "u1",
				LiveIn: h("r"), LiveAll: h("all4"), Uses: "u2",
				Baseline: map[string]string{"Secret/db": h("db2+user")}, BaselineUses: "u2", LiveExternal: map[string]string{"Secret/db": h("db3+user")}},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonExternalChanged, Changed: []string{"Secret/db"},
				Record: controller.Record{ControllerHash: h("all4"), ControllerBase: h("r"), Baseline: "uses=u2,Secret/db=" + h("db3+user"), Uses: "u2"}},
		},
		{
			name: "new render after a roll, in-stream content the render does not hold, its rollout seen after the last change: recorded, not rolled again",
			in: controller.Input{RenderHash: h("r2"), RawRenderHash: h("r2"), ControllerHash: h("all1"), ControllerBase: h("r1"),
				LiveIn: h("live2"), LiveAll: h("all2"), RenderStarted: true},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonRenderStarted,
				Record: controller.Record{RenderBaseline: h("r2") + "=" + h("live2")}},
		},
		{
			name: "the same, not seen (a restart, or a config changed after the template): roll",
			in: controller.Input{RenderHash: h("r2"), RawRenderHash: h("r2"), ControllerHash: h("all1"), ControllerBase: h("r1"),
				LiveIn: h("live2"), LiveAll: h("all2")},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonRenderMismatch,
				Record: controller.Record{ControllerHash: h("all2"), ControllerBase: h("r2")}},
		},
		{
			name: "render baseline recorded and the live content still the same: in sync",
			in: controller.Input{RenderHash: h("r2"), RawRenderHash: h("r2"), ControllerHash: h("all1"), ControllerBase: h("r1"),
				LiveIn: h("live2"), LiveAll: h("all2"), RenderBaseline: h("live2")},
			want: controller.Decision{Action: controller.ActionNone, Reason: controller.ReasonInSync},
		},
		{
			name: "render baseline recorded, the content then taken back to the render's: roll (the pods read the recorded content)",
			in:   controller.Input{RenderHash: h("r2"), RawRenderHash: h("r2"), LiveIn: h("r2"), LiveAll: h("all3"), RenderBaseline: h("live2")},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonRenderMismatch,
				Record: controller.Record{ControllerHash: h("all3"), ControllerBase: h("r2")}},
		},
		{
			name: "render baseline recorded, then an edit: roll, the record goes",
			in:   controller.Input{RenderHash: h("r2"), RawRenderHash: h("r2"), LiveIn: h("live3"), LiveAll: h("all3"), RenderBaseline: h("live2")},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonRenderMismatch,
				Record: controller.Record{ControllerHash: h("all3"), ControllerBase: h("r2")}},
		},
		{
			name: "render baseline recorded, an external config new: both kept",
			in: controller.Input{RenderHash: h("r2"), RawRenderHash: h("r2"), LiveIn: h("live2"), LiveAll: h("all2"), RenderBaseline: h("live2"),
				LiveExternal: map[string]string{"Secret/db": h("db1")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonNewExternal,
				Record: controller.Record{Baseline: "Secret/db=" + h("db1"), RenderBaseline: h("r2") + "=" + h("live2")}},
		},
		{
			name: "rollout seen after the last change, an external config changed before it: its pods read it, recorded, not rolled again",
			in: controller.Input{RenderHash: h("r2"), RawRenderHash: h("r2"), LiveIn: h("r2"), LiveAll: h("all2"), RenderStarted: true,
				Baseline: map[string]string{"Secret/db": h("db1")}, LiveExternal: map[string]string{"Secret/db": h("db2")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonRenderStarted, Changed: []string{"Secret/db"},
				Record: controller.Record{Baseline: "Secret/db=" + h("db2")}},
		},
		{
			name: "the same, not seen (a restart, or the Secret changed after the template): roll",
			in: controller.Input{RenderHash: h("r2"), RawRenderHash: h("r2"), LiveIn: h("r2"), LiveAll: h("all2"),
				Baseline: map[string]string{"Secret/db": h("db1")}, LiveExternal: map[string]string{"Secret/db": h("db2")}},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonExternalChanged, Changed: []string{"Secret/db"},
				Record: controller.Record{ControllerHash: h("all2"), ControllerBase: h("r2"), Baseline: "Secret/db=" + h("db2")}},
		},
		{
			name: "rollout seen, the live content is the render's: in sync, nothing recorded",
			in:   controller.Input{RenderHash: h("r2"), RawRenderHash: h("r2"), LiveIn: h("r2"), LiveAll: h("all2"), RenderStarted: true},
			want: controller.Decision{Action: controller.ActionNone, Reason: controller.ReasonInSync},
		},
		{
			// TestRenderBaselineRemoved on the cluster.
			name: "render baseline removed by another writer, the template as it was, the content as it named: written again, no roll",
			in: controller.Input{RenderHash: h("r2"), RawRenderHash: h("r2"), LiveIn: h("live2"), LiveAll: h("all2"),
				FirstSeenRender: h("live2"), Baseline: map[string]string{"Secret/db": h("db1")}, LiveExternal: map[string]string{"Secret/db": h("db1")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonRenderStarted,
				Record: controller.Record{Baseline: "Secret/db=" + h("db1"), RenderBaseline: h("r2") + "=" + h("live2")}},
		},
		{
			name: "optional config recorded absent, landed with the pods: baseline recorded, no roll",
			in: controller.Input{RenderHash: h("r"), RawRenderHash: h("r"), LiveIn: h("r"), LiveAll: h("all2"),
				Baseline: map[string]string{"Secret/pull": h("absent")}, Landed: map[string]string{"Secret/pull": h("absent")},
				LiveExternal: map[string]string{"Secret/pull": h("pull1")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonNewExternal,
				Record: controller.Record{Baseline: "Secret/pull=" + h("pull1")}},
		},
		{
			name: "optional config first seen absent, landed with the pods: baseline recorded, no roll",
			in: controller.Input{LiveAll: h("all2"), FirstSeen: map[string]string{"Secret/pull": h("absent")},
				Landed: map[string]string{"Secret/pull": h("absent")}, LiveExternal: map[string]string{"Secret/pull": h("pull1")}},
			want: controller.Decision{Action: controller.ActionRecordBaseline, Reason: controller.ReasonNewExternal,
				Record: controller.Record{Baseline: "Secret/pull=" + h("pull1")}},
		},
		{
			name: "optional config landed with the pods, but recorded with content: its edit rolls",
			in: controller.Input{LiveAll: h("all2"), Baseline: map[string]string{"Secret/pull": h("pull1")},
				Landed: map[string]string{"Secret/pull": h("absent")}, LiveExternal: map[string]string{"Secret/pull": h("pull2")}},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonExternalChanged, Changed: []string{"Secret/pull"},
				Record: controller.Record{ControllerHash: h("all2"), ControllerBase: controller.NoRenderHash, Baseline: "Secret/pull=" + h("pull2")}},
		},
		{
			name: "one config landed with the pods, another edited: roll for the edit only",
			in: controller.Input{LiveAll: h("all2"), Baseline: map[string]string{"Secret/pull": h("absent"), "Secret/db": h("db1")},
				Landed: map[string]string{"Secret/pull": h("absent")}, LiveExternal: map[string]string{"Secret/pull": h("pull1"), "Secret/db": h("db2")}},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonExternalChanged, Changed: []string{"Secret/db"},
				Record: controller.Record{ControllerHash: h("all2"), ControllerBase: controller.NoRenderHash, Baseline: "Secret/db=" + h("db2") + ",Secret/pull=" + h("pull1")}},
		},
		{
			name: "render baseline removed by another writer, the content edited before or after: roll",
			in:   controller.Input{RenderHash: h("r2"), RawRenderHash: h("r2"), LiveIn: h("live3"), LiveAll: h("all3"), FirstSeenRender: h("live2")},
			want: controller.Decision{Action: controller.ActionRoll, Reason: controller.ReasonRenderMismatch,
				Record: controller.Record{ControllerHash: h("all3"), ControllerBase: h("r2")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, controller.Decide(tt.in))
		})
	}
}

func TestBaselineRoundTrip(t *testing.T) {
	m := map[string]string{"Secret/b": h("2"), "ConfigMap/a": h("1")}
	pairs := "ConfigMap/a=" + h("1") + ",Secret/b=" + h("2")
	for _, c := range []struct{ keyID, uses, want string }{
		{"", "", pairs},
		{"0011223344556677", "", "key-id=0011223344556677," + pairs},
		{"", "8899aabbccddeeff", "uses=8899aabbccddeeff," + pairs},
		{"0011223344556677", "8899aabbccddeeff", "key-id=0011223344556677,uses=8899aabbccddeeff," + pairs},
	} {
		s := controller.FormatBaseline(m, c.keyID, c.uses)
		assert.Equal(t, c.want, s)
		got, keyID, uses := controller.ParseBaseline(s)
		assert.Equal(t, m, got, s)
		assert.Equal(t, c.keyID, keyID, s)
		assert.Equal(t, c.uses, uses, s)
		assert.Empty(t, controller.FormatBaseline(nil, c.keyID, c.uses), "no hashes, no annotation")
	}

	for _, bad := range []string{"", "garbage", "ConfigMap/a=", "=x", "noslash=" + h("1"), "ConfigMap/a=" + h("1") + ",",
		"key-id=0011", "ConfigMap/a=" + h("1") + ",key-id=0011", "key-id=,ConfigMap/a=" + h("1"),
		"uses=0011", "uses=,ConfigMap/a=" + h("1"), "ConfigMap/a=" + h("1") + ",uses=0011", "uses=0011,key-id=0011,ConfigMap/a=" + h("1"),
		"uses=0011,uses=0011,ConfigMap/a=" + h("1")} {
		got, keyID, uses := controller.ParseBaseline(bad)
		assert.Nil(t, got, bad)
		assert.Empty(t, keyID, bad)
		assert.Empty(t, uses, bad)
	}
}

func TestRenderBaselineRoundTrip(t *testing.T) {
	s := controller.FormatRenderBaseline(h("r"), h("live"))
	assert.Equal(t, h("live"), controller.ParseRenderBaseline(s, h("r")))
	for _, c := range []struct{ value, render string }{
		{s, h("other")}, {s, ""}, {"", h("r")}, {"garbage", h("r")}, {h("live"), h("r")},
	} {
		assert.Empty(t, controller.ParseRenderBaseline(c.value, c.render), "%q for %q", c.value, c.render)
	}
}

func TestWait(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := time.Second
	tests := []struct {
		now, first, last time.Time
		want             time.Duration
		why              controller.Reason
	}{
		{now: t0, first: t0, want: 2 * sec, why: "coalescing"},
		{now: t0.Add(2 * sec), first: t0, want: 0},
		{now: t0.Add(3 * sec), first: t0, last: t0.Add(-10 * sec), want: 7 * sec, why: "min-roll-interval"},
		{now: t0.Add(30 * sec), first: t0.Add(29 * sec), last: t0, want: sec, why: "coalescing"},
		{now: t0.Add(31 * sec), first: t0.Add(29 * sec), last: t0, want: 0},
	}
	for i, tt := range tests {
		got, why := controller.Wait(tt.now, tt.first, tt.last, 2*sec, 20*sec)
		assert.Equal(t, tt.want, got, "case %d", i)
		assert.Equal(t, tt.why, why, "case %d", i)
	}
}

// FuzzDecide checks the properties the scenarios rely on, for arbitrary
// combinations of recorded and live hashes:
//   - a missing required config never rolls;
//   - writing what a decision says to write, then deciding again on the same
//     live state, does nothing (no loop, never two rolls for one change);
//   - when the live content matches the render and every baseline, nothing
//     rolls.
func FuzzDecide(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(0), uint8(0), uint8(1), uint8(2), uint8(3), uint8(3), false, false, uint8(0))
	f.Add(uint8(1), uint8(2), uint8(3), uint8(1), uint8(0), uint8(0), uint8(1), uint8(2), true, true, uint8(0))
	f.Add(uint8(1), uint8(1), uint8(3), uint8(1), uint8(2), uint8(2), uint8(1), uint8(2), true, false, uint8(5))
	f.Fuzz(func(t *testing.T, render, liveIn, ctrlHash, ctrlBase, liveAll, extA, baseA, extB uint8, keyed, missing bool, keys uint8) {
		// The pod spec's uses fingerprint and those of the two records,
		// each one of none (a record made before they were recorded), u1
		// or u2, from the high bits of keys.
		prints := []string{"", "u1", "u2"}
		val := func(n uint8) string {
			if n%5 == 0 {
				return ""
			}
			if keyed && n%7 == 3 {
				return k(fmt.Sprint(n % 4))
			}
			return h(fmt.Sprint(n % 4))
		}
		in := controller.Input{
			RenderHash: val(render), ControllerHash: val(ctrlHash), LiveIn: val(liveIn) + "i", LiveAll: val(liveAll) + "a",
			LiveExternal: map[string]string{},
		}
		in.RawRenderHash = in.RenderHash
		if in.LiveIn == "i" {
			in.LiveIn = h("in")
		}
		if in.LiveAll == "a" {
			in.LiveAll = h("all")
		}
		in.ControllerBase = []string{"", controller.NoRenderHash, in.RawRenderHash, h("other")}[ctrlBase%4]
		if v := val(extA); v != "" {
			in.LiveExternal["Secret/a"] = v
		}
		if v := val(extB); v != "" {
			in.LiveExternal["ConfigMap/b"] = v
		}
		if v := val(baseA); v != "" {
			in.Baseline = map[string]string{"Secret/a": v}
		}
		if missing {
			in.Missing = []string{"ConfigMap/b"}
		}
		// The controller's key id and those of its two records, each one of
		// none, a or b.
		ids := []string{"", "id-a", "id-b"}
		in.KeyID, in.ControllerKeyID, in.BaselineKeyID = ids[keys%3], ids[keys/3%3], ids[keys/9%3]
		in.Uses, in.ControllerUses, in.BaselineUses = prints[1+keys/27%2], prints[keys/54%3], prints[keys/162%3]
		// A render baseline (of one of the live in-stream values) and the
		// render's rollout seen after the last change, from baseA's high
		// bits.
		if baseA/16%3 == 1 {
			in.RenderBaseline = val(liveIn^baseA) + "i"
		}
		in.RenderStarted = baseA/48%2 == 1
		d := controller.Decide(in)
		if !reflect.DeepEqual(d, controller.Decide(in)) {
			t.Fatal("Decide is not deterministic")
		}
		if missing {
			if d.Action != controller.ActionBlocked {
				t.Fatalf("missing config but %s", d.Action)
			}
			return
		}
		after := in
		switch d.Action {
		case controller.ActionRoll:
			after.ControllerHash, after.ControllerBase, after.ControllerKeyID = d.Record.ControllerHash, d.Record.ControllerBase, d.Record.KeyID
			after.ControllerUses = d.Record.Uses
			after.Baseline, after.BaselineKeyID, after.BaselineUses = controller.ParseBaseline(d.Record.Baseline)
			after.RenderBaseline, after.RenderStarted = "", false
		case controller.ActionRecordBaseline:
			after.Baseline, after.BaselineKeyID, after.BaselineUses = controller.ParseBaseline(d.Record.Baseline)
			after.RenderBaseline = controller.ParseRenderBaseline(d.Record.RenderBaseline, in.RawRenderHash)
		}
		if again := controller.Decide(after); again.Action != controller.ActionNone {
			t.Fatalf("after %s (%s), deciding again gives %s (%s); input %+v", d.Action, d.Reason, again.Action, again.Reason, in)
		}
		inSync := in.RenderHash == "" || in.LiveIn == in.RenderHash
		if in.RenderBaseline != "" {
			inSync = in.RenderHash == "" || in.LiveIn == in.RenderBaseline
		}
		for ref, v := range in.LiveExternal {
			if b, ok := in.Baseline[ref]; ok && b != v && in.BaselineComparable() {
				inSync = false
			}
		}
		controllerRecord := in.ControllerHash != "" && in.ControllerKeyID == in.KeyID && (in.ControllerUses == "" || in.ControllerUses == in.Uses)
		if inSync && !controllerRecord && d.Action == controller.ActionRoll {
			t.Fatalf("rolled although live content matches the render and the baselines of this key: %+v", in)
		}
	})
}

// FuzzParseBaseline: the external-baseline annotation can be damaged by hand
// or by another tool. Whatever it holds, ParseBaseline either refuses it
// (nil hashes, so a fresh baseline is recorded) or reads hashes that
// FormatBaseline writes back to a value read the same way.
func FuzzParseBaseline(f *testing.F) {
	for _, s := range []string{
		"", "Secret/a=" + h("1"), "key-id=0123,ConfigMap/a=" + k("1") + ",Secret/b=" + k("2"),
		"uses=abcd,Secret/a=" + h("1"), "key-id=01,uses=ab,Secret/a=x", "uses=ab,key-id=01,Secret/a=x",
		"Secret/a", "=x", "Secret/a=", "a=b", ",", "Secret/a=x,,Secret/b=y", "Secret/a=x=y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hashes, keyID, uses := controller.ParseBaseline(s)
		if hashes == nil {
			return
		}
		again, keyID2, uses2 := controller.ParseBaseline(controller.FormatBaseline(hashes, keyID, uses))
		if !reflect.DeepEqual(hashes, again) || keyID != keyID2 || uses != uses2 {
			t.Fatalf("ParseBaseline(%q) = %v %q %q; written back and read again: %v %q %q", s, hashes, keyID, uses, again, keyID2, uses2)
		}
	})
}
