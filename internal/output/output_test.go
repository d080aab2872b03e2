package output

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/hashing"
)

// TestConsumedJSON pins the record explain --json and status -o json print
// for a consumed config: the field names, their order, and what is left out
// when empty.
func TestConsumedJSON(t *testing.T) {
	tests := []struct {
		name     string
		use      hashing.Use
		external bool
		want     string
	}{
		{"keys", hashing.Use{Kind: hashing.KindConfigMap, Name: "app", Keys: []string{"A", "b"}}, false,
			`{"kind":"ConfigMap","name":"app","keys":["A","b"],"whole":false,"external":false}`},
		{"whole, optional, external", hashing.Use{Kind: hashing.KindSecret, Name: "creds", All: true, Optional: true}, true,
			`{"kind":"Secret","name":"creds","whole":true,"optional":true,"external":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(ConsumedOf(tt.use, tt.external))
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(b))
		})
	}
}

func TestWorkloadID(t *testing.T) {
	assert.Equal(t, "Deployment shop/web", WorkloadID("Deployment", "shop", "web"))
	assert.Equal(t, "CronJob report", WorkloadID("CronJob", "", "report"))
}

// TestRefOrder pins the order diff and status list workloads in: namespace,
// then kind, then name, and the cluster-scoped or unnamespaced first.
func TestRefOrder(t *testing.T) {
	refs := []Ref{
		{Kind: "StatefulSet", Namespace: "shop", Name: "db"},
		{Kind: "Deployment", Namespace: "shop", Name: "web"},
		{Kind: "Deployment", Namespace: "shop", Name: "api"},
		{Kind: "Deployment", Namespace: "", Name: "zeta"},
		{Kind: "DaemonSet", Namespace: "ops", Name: "agent"},
	}
	slices.SortFunc(refs, Ref.Compare)
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.ID()
	}
	assert.Equal(t, []string{"Deployment zeta", "DaemonSet ops/agent", "Deployment shop/api", "Deployment shop/web", "StatefulSet shop/db"}, ids)
	assert.Zero(t, Ref{Kind: "Deployment", Name: "web"}.Compare(Ref{Kind: "Deployment", Name: "web"}))
}
