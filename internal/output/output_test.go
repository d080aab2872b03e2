package output

import (
	"encoding/json"
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
