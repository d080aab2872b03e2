package status

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArgoRolloutProgress(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		status               string
		generation           int64
		wantDone             bool
		wantObserved         int64
		wantStale, wantPods  int
		wantMessageFragments []string
	}{
		{name: "healthy, generation as a string", status: `{"observedGeneration":"3","replicas":2,"updatedReplicas":2,"availableReplicas":2,"phase":"Healthy"}`,
			generation: 3, wantDone: true, wantObserved: 3, wantPods: 2, wantMessageFragments: []string{"complete", "phase Healthy"}},
		{name: "progressing, one replica on the old template", status: `{"observedGeneration":"4","replicas":3,"updatedReplicas":2,"availableReplicas":2,"phase":"Progressing","message":"more replicas need to be updated"}`,
			generation: 4, wantObserved: 4, wantStale: 1, wantPods: 3, wantMessageFragments: []string{"in progress", "phase Progressing: more replicas need to be updated"}},
		{name: "generation not yet observed", status: `{"observedGeneration":"4","replicas":1,"updatedReplicas":1,"availableReplicas":1,"phase":"Healthy"}`,
			generation: 5, wantObserved: 4, wantPods: 1, wantMessageFragments: []string{"generation 5"}},
		{name: "numeric observedGeneration", status: `{"observedGeneration":2,"phase":"Healthy"}`, generation: 2, wantDone: true, wantObserved: 2, wantMessageFragments: []string{"phase Healthy"}},
		{name: "a spec hash, as before Argo Rollouts 1.0", status: `{"observedGeneration":"5b9f7d6c4","phase":"Healthy"}`,
			generation: 7, wantDone: true, wantObserved: 7},
		{name: "no Argo Rollouts controller", status: `{}`, generation: 1, wantMessageFragments: []string{"no phase reported"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r argoRollout
			r.Generation = tc.generation
			require.NoError(t, json.Unmarshal([]byte(tc.status), &r.Status))
			got := r.progress()
			assert.Equal(t, tc.wantDone, got.Done)
			assert.Equal(t, tc.wantObserved, got.ObservedGeneration)
			assert.Equal(t, tc.wantStale, got.StalePods)
			assert.Equal(t, tc.wantPods, got.Pods)
			for _, f := range tc.wantMessageFragments {
				assert.Contains(t, got.Message, f)
			}
		})
	}
}
