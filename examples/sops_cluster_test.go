package examples_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/testing/cptest"
	"github.com/confighash/confighash/internal/testing/testtools"
)

// sopsApp is a repository as Flux keeps it, rendered in CI without the
// keys: a Deployment reading a ConfigMap, a pull Secret and a key of a
// token Secret, the two Secrets encrypted with SOPS (%[1]s is the
// namespace, %[2]s the ConfigMap's value, %[3]s the token's ciphertext).
const sopsApp = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: %[1]s
spec:
  selector:
    matchLabels: {app: podinfo}
  template:
    metadata:
      labels: {app: podinfo}
    spec:
      imagePullSecrets:
      - name: podinfo-registry
      containers:
      - name: podinfo
        image: example/podinfo:6
        envFrom:
        - configMapRef: {name: podinfo-config}
        env:
        - name: TOKEN
          valueFrom:
            secretKeyRef: {name: podinfo-token, key: token}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: podinfo-config
  namespace: %[1]s
data:
  PODINFO_UI_COLOR: "%[2]s"
---
apiVersion: v1
kind: Secret
metadata:
  name: podinfo-registry
  namespace: %[1]s
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: ENC[AES256_GCM,data:cmVnaXN0cnk=,iv:aXY=,tag:dGFn,type:str]
sops:
  lastmodified: "2026-11-27T23:00:00Z"
  mac: ENC[AES256_GCM,data:bWFj,iv:aXY=,tag:dGFn,type:str]
  version: 3.9.0
---
apiVersion: v1
kind: Secret
metadata:
  name: podinfo-token
  namespace: %[1]s
stringData:
  token: ENC[AES256_GCM,data:%[3]s,iv:aXY=,tag:dGFn,type:str]
sops:
  lastmodified: "2026-11-27T23:00:00Z"
  mac: ENC[AES256_GCM,data:bWFj,iv:aXY=,tag:dGFn,type:str]
  version: 3.9.0
`

// fluxDecrypts is what Flux's kustomize-controller applies of a render: each
// Secret with a sops field replaced by its plaintext (plain, by name), the
// sops field gone; every other document as rendered; in Flux's order, the
// ConfigMaps and Secrets before the Deployment (fluxcd/pkg/ssa sorts the
// objects it applies by kind: ConfigMap, Secret, ..., Deployment).
func fluxDecrypts(t *testing.T, render, namespace string, plain map[string]string) string {
	t.Helper()
	var docs, workloads []string
	for _, d := range testtools.Documents(render) {
		if !strings.Contains(d, "\nsops:\n") {
			if strings.Contains(d, "\nkind: Deployment\n") {
				workloads = append(workloads, d)
			} else {
				docs = append(docs, d)
			}
			continue
		}
		var name string
		for n := range plain {
			if strings.Contains(d, "\n  name: "+n+"\n") {
				name = n
			}
		}
		require.NotEmpty(t, name, "no plaintext for the encrypted Secret:\n%s", d)
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\n%s", name, namespace, plain[name]))
	}
	return strings.Join(append(docs, workloads...), "\n---\n") + "\n"
}

// TestFluxSOPSOnCluster follows docs/flux.md ("Secrets encrypted with
// SOPS") on the local control plane: CI renders the repository with its
// Secrets encrypted, confighash records them as external, and what Flux
// applies (decrypted, fluxDecrypts) rolls nothing on the first apply; a
// sops edit of the token in Git leaves the render-time hash as it was, and
// the controller rolls the Deployment once when the new token is applied;
// a change of the ConfigMap moves the render-time hash, one roll by the
// Deployment controller, none by confighash's.
func TestFluxSOPSOnCluster(t *testing.T) {
	cptest.Require(t)
	t.Parallel()
	c := newCluster(t, "flux-sops")
	ns := c.namespace
	registry := "type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{\"auths\":{}}'\n"
	render := func(color, token string) string {
		res := testtools.Run(t, "", nil, []byte(fmt.Sprintf(sopsApp, ns, color, token)), testtools.Tool(t, "confighash"))
		require.Zero(t, res.ExitCode, res.Stderr)
		assert.Contains(t, res.Stderr, "consumes Secret "+ns+"/podinfo-token, which is encrypted with SOPS")
		return res.Stdout
	}
	first := render("#34577c", "Zmlyc3Q=")
	assert.Contains(t, first, "confighash.dev/external: Secret/podinfo-registry,Secret/podinfo-token")
	ctrl := startController(t, "controller", ns)

	c.apply(t, fluxDecrypts(t, first, ns, map[string]string{"podinfo-registry": registry, "podinfo-token": "stringData:\n  token: first\n"}))
	applied := c.deployment(t, "podinfo")
	require.Equal(t, 1, applied.replicaSets)
	require.NotEmpty(t, applied.hash())
	ctrl.settled(t, c.release, "podinfo", 0)
	assert.Zero(t, ctrl.rolls(), "the controller rolled after the first apply")
	assertRolled(t, "the first apply, settled", 0, applied, c.deployment(t, "podinfo"))

	// sops edit of the token: new ciphertext, the same render-time hash.
	second := render("#34577c", "c2Vjb25k")
	assert.Equal(t, first, strings.Replace(second, "c2Vjb25k", "Zmlyc3Q=", 1), "only the ciphertext differs")
	c.apply(t, fluxDecrypts(t, second, ns, map[string]string{"podinfo-registry": registry, "podinfo-token": "stringData:\n  token: second\n"}))
	rolled := ctrl.rolledOnce(t, c.release, "podinfo", "Flux applied the new token", 1, applied)

	// A ConfigMap change in Git: the render-time hash moves, the
	// Deployment controller rolls, confighash's does not.
	third := render("#000000", "c2Vjb25k")
	c.apply(t, fluxDecrypts(t, third, ns, map[string]string{"podinfo-registry": registry, "podinfo-token": "stringData:\n  token: second\n"}))
	changed := c.deployment(t, "podinfo")
	assert.NotEqual(t, rolled.hash(), changed.hash(), "the render-time hash of the ConfigMap change")
	ctrl.settled(t, c.release, "podinfo", 0)
	assert.InDelta(t, 1, ctrl.rolls(), 0, "the controller rolled for a change the render hashed")
	assertRolled(t, "the ConfigMap change", 1, rolled, c.deployment(t, "podinfo"))
}
