package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestConsumerIndex: the index finds exactly the workloads that consume a
// config, by namespace, kind and name, through adds, changes and removals.
func TestConsumerIndex(t *testing.T) {
	kinds := builtinKinds()
	deploy, sts := kinds[0], kinds[1]
	cm := func(ns, name string) configRef { return configRef{namespace: ns, name: name} }
	secret := func(ns, name string) configRef { return configRef{namespace: ns, name: name, secret: true} }
	web, db, api := consumer{kind: deploy, name: "web"}, consumer{kind: sts, name: "db"}, consumer{kind: deploy, name: "api"}
	type step struct {
		c        consumer
		old, cur []configRef
	}
	tests := []struct {
		name  string
		steps []step
		ref   configRef
		want  []consumer
	}{
		{name: "one consumer", steps: []step{{web, nil, []configRef{cm("a", "app")}}}, ref: cm("a", "app"), want: []consumer{web}},
		{name: "a Secret is not the ConfigMap of its name", steps: []step{{web, nil, []configRef{cm("a", "app")}}}, ref: secret("a", "app")},
		{name: "another namespace", steps: []step{{web, nil, []configRef{cm("a", "app")}}}, ref: cm("b", "app")},
		{name: "shared by kinds", steps: []step{
			{web, nil, []configRef{secret("a", "pull")}}, {db, nil, []configRef{secret("a", "pull")}}, {api, nil, []configRef{secret("a", "pull")}},
		}, ref: secret("a", "pull"), want: []consumer{web, db, api}},
		{name: "a consumer that stops consuming", steps: []step{
			{web, nil, []configRef{cm("a", "app")}}, {api, nil, []configRef{cm("a", "app")}},
			{web, []configRef{cm("a", "app")}, []configRef{cm("a", "other")}},
		}, ref: cm("a", "app"), want: []consumer{api}},
		{name: "a deleted consumer", steps: []step{
			{web, nil, []configRef{cm("a", "app")}}, {web, []configRef{cm("a", "app")}, nil},
		}, ref: cm("a", "app")},
		{name: "a new consumer after a change", steps: []step{
			{web, nil, []configRef{cm("a", "old")}}, {web, []configRef{cm("a", "old")}, []configRef{cm("a", "app")}},
		}, ref: cm("a", "app"), want: []consumer{web}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newConsumerIndex(kinds)
			for _, ch := range ix.synced {
				close(ch)
			}
			for _, s := range tt.steps {
				ix.update(s.c, s.old, s.cur)
			}
			assert.ElementsMatch(t, tt.want, ix.consumers(context.Background(), tt.ref))
			if tt.want == nil {
				assert.Empty(t, ix.byRef[ix.hash(tt.ref)], "no entry left for a config nobody consumes")
			}
		})
	}
}

// TestConsumerIndexWaitsForSync: before every workload kind's initial list
// is indexed, a lookup waits (here, until its context ends).
func TestConsumerIndexWaitsForSync(t *testing.T) {
	kinds := builtinKinds()
	ix := newConsumerIndex(kinds)
	ref := configRef{namespace: "a", name: "app"}
	ix.update(consumer{kind: kinds[0], name: "web"}, nil, []configRef{ref})
	for _, k := range kinds[1:] {
		close(ix.synced[k])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Empty(t, ix.consumers(ctx, ref), "a lookup before the Deployments are indexed")
	close(ix.synced[kinds[0]])
	assert.Len(t, ix.consumers(context.Background(), ref), 1)
}
