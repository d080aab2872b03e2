package status

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/confighash/confighash/internal/output"
)

// TestEmptyReport: a namespace with no managed workload reports an empty
// list, in JSON too ("workloads": [], not null, for scripts that iterate),
// and the table says so.
func TestEmptyReport(t *testing.T) {
	r, err := Collect(context.Background(), fake.NewClientset(), Options{Namespace: "shop"})
	require.NoError(t, err)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"workloads": []}`, string(b))
	var table bytes.Buffer
	require.NoError(t, WriteTable(&table, r, time.Now()))
	// The namespace is named: a misspelt one is no error to the API
	// server, which lists nothing in it.
	assert.Equal(t, "no workload managed by confighash in namespace shop\n", table.String())

	r, err = Collect(context.Background(), fake.NewClientset(), Options{Namespace: "shop", AllNamespaces: true})
	require.NoError(t, err)
	table.Reset()
	require.NoError(t, WriteTable(&table, r, time.Now()))
	assert.Equal(t, "no workload managed by confighash in any namespace\n", table.String())
}

// TestConfigJSON: a consumed config is one flat JSON object, the fields of
// output.Consumed (as explain --json prints them) beside what the live
// objects say.
func TestConfigJSON(t *testing.T) {
	c := Config{Consumed: output.Consumed{Kind: "ConfigMap", Name: "app", Keys: []string{"LOG_LEVEL"}}, Found: true}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"ConfigMap","name":"app","keys":["LOG_LEVEL"],"whole":false,"external":false,"found":true}`, string(b))
}
