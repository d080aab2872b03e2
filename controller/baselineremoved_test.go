package controller

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNoteBaselineRemoved is the watch handler's narrow decision on a
// workload update that took the controller's external baseline away: the
// hashes it held stand as first seen (the pods still run that content)
// when the pod template stayed as it was, whether the baseline was
// removed or replaced by one this controller cannot compare (a second
// controller of the same prefix under another HMAC key writes its own into
// the same annotation). Its own newer baseline, or a template change,
// keeps nothing.
func TestNoteBaselineRemoved(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		name := "plain"
		opts := DefaultOptions()
		if keyed {
			name, opts.Key = "keyed", []byte("the controller's key")
		}
		t.Run(name, func(t *testing.T) { testNoteBaselineRemoved(t, opts) })
	}
}

func testNoteBaselineRemoved(t *testing.T, opts Options) {
	m, err := newMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	r := newReconciler(nil, nil, nil, builtinKinds(), m, opts, logr.Discard())
	deployment := r.kinds["Deployment"]
	k := r.keys
	req := Request{Kind: "Deployment", Namespace: "ns", Name: "web"}
	obj := func(meta map[string]string, image string) *appsv1.Deployment {
		tmpl := podTemplate(nil)
		tmpl.Spec.Containers[0].Image = image
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: meta},
			Spec: appsv1.DeploymentSpec{Template: *tmpl}}
	}
	uses := r.view(req, obj(nil, "app:1"), podTemplate(nil)).UsesPrint
	h1, h2 := "v1-sha256:one", "v1-sha256:two"
	own := FormatBaseline(map[string]string{"Secret/db": h1}, r.keyID, uses)
	ownNewer := FormatBaseline(map[string]string{"Secret/db": h2}, r.keyID, uses)
	other := FormatBaseline(map[string]string{"Secret/db": h2}, "0123456789abcdef", uses)
	enabled := func(baseline string) map[string]string {
		a := map[string]string{k.enabled: "true"}
		if baseline != "" {
			a[k.baseline] = baseline
		}
		return a
	}
	held := map[string]string{"Secret/db": h1}
	tests := []struct {
		name          string
		before, after string // the external baseline annotation; "" is none
		image         string // the pod template's image after ("app:1" before)
		want          map[string]string
	}{
		{name: "removed, template kept", before: own, want: held},
		{name: "replaced under another key, template kept", before: own, after: other, want: held},
		{name: "replaced by its own newer baseline", before: own, after: ownNewer},
		{name: "unchanged", before: own, after: own},
		{name: "removed with a template change: pods restarted", before: own, image: "app:2"},
		{name: "replaced under another key with a template change", before: own, after: other, image: "app:2"},
		{name: "another key's baseline removed: not this controller's", before: other},
		{name: "none before, another key's after", after: other},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r.memory = newMemory()
			image := tc.image
			if image == "" {
				image = "app:1"
			}
			r.noteBaselineRemoved(req, deployment, obj(enabled(tc.before), "app:1"), obj(enabled(tc.after), image))
			assert.Equal(t, tc.want, r.memory.firstSeen(req))
		})
	}
}
