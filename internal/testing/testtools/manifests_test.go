package testtools_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/confighash/confighash/internal/testing/testtools"
)

const (
	cm     = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  k: v\n"
	deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
)

// TestDocuments: a stream splits at its "---" lines, wherever they stand,
// into documents without the blank lines around them.
func TestDocuments(t *testing.T) {
	want := []string{cm[:len(cm)-1], deploy[:len(deploy)-1]}
	for name, stream := range map[string]string{
		"between":        cm + "---\n" + deploy,
		"leading":        "---\n" + cm + "---\n" + deploy,
		"trailing":       cm + "---\n" + deploy + "---\n",
		"blank lines":    cm + "\n---\n\n" + deploy,
		"no end newline": cm + "---\n" + deploy[:len(deploy)-1],
	} {
		assert.Equal(t, want, testtools.Documents(stream), name)
	}
	assert.Empty(t, testtools.Documents("---\n"))
}

func TestResourceList(t *testing.T) {
	assert.Equal(t, "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"+
		"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n  data:\n    k: v\n"+
		"- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: web}\n",
		testtools.ResourceList(cm+"---\n"+deploy, ""))
	assert.Equal(t, "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"+
		"- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: web}\n"+
		"functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n  data:\n    k: v\n",
		testtools.ResourceList(deploy, cm))
}

func TestLists(t *testing.T) {
	assert.Equal(t, "apiVersion: v1\nkind: List\nitems:\n"+
		"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n  data:\n    k: v\n",
		testtools.List(cm))
	assert.Equal(t, "    - a: 1\n      b: 2\n", testtools.Items("    ", "a: 1\nb: 2"))
	assert.Equal(t, "apiVersion: v1\nkind: ConfigMapList\nitems:\n- metadata: {name: c}\n  data:\n    k: v\n",
		testtools.TypedList("v1", "ConfigMapList", cm))
	assert.Panics(t, func() { testtools.TypedList("v1", "ConfigMapList", "metadata: {name: c}\n") })
}
