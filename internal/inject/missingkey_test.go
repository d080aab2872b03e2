package inject

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMissingRequiredKey: a key an env valueFrom or volume items read
// without optional: true, which its config in the stream does not have,
// stops the pod (CreateContainerConfigError, or a volume that cannot
// mount); the controller blocks such a roll. The render warns, naming the
// key and the config, never a value; an optional read, a key present, or a
// config outside the stream, is no warning.
func TestMissingRequiredKey(t *testing.T) {
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: s3cr3t}\n"
	deploy := func(container string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  template:\n    spec:\n" + container
	}
	cases := []struct {
		name, workload string
		warning        string // a finding containing this; "" for none
	}{
		{name: "env valueFrom, key missing",
			workload: "      containers:\n      - name: c\n        env: [{name: U, valueFrom: {secretKeyRef: {name: creds, key: username}}}]\n",
			warning:  "reads key username of Secret shop/creds, which has no such key: pods will not start until it has"},
		{name: "volume items, keys missing",
			workload: "      containers: [{name: c}]\n      volumes: [{name: v, secret: {secretName: creds, items: [{key: tls.crt, path: a}, {key: tls.key, path: b}, {key: password, path: c}]}}]\n",
			warning:  "reads keys tls.crt, tls.key of Secret shop/creds"},
		{name: "optional key",
			workload: "      containers:\n      - name: c\n        env: [{name: U, valueFrom: {secretKeyRef: {name: creds, key: username, optional: true}}}]\n"},
		{name: "key present",
			workload: "      containers:\n      - name: c\n        env: [{name: U, valueFrom: {secretKeyRef: {name: creds, key: password}}}]\n"},
		{name: "config not in the stream",
			workload: "      containers:\n      - name: c\n        env: [{name: U, valueFrom: {configMapKeyRef: {name: other, key: k}}}]\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := analyze(t, Options{}, strings.Replace(secret, "{name: creds}", "{name: creds, namespace: shop}", 1), deploy(tc.workload))
			var warnings []string
			for _, f := range r.Findings {
				if f.Severity == SeverityWarning && strings.Contains(f.Message, "no such key") {
					warnings = append(warnings, f.Message)
				}
				assert.NotContains(t, f.Message, "s3cr3t")
			}
			if tc.warning == "" {
				assert.Empty(t, warnings)
				return
			}
			require.Len(t, warnings, 1)
			assert.Contains(t, warnings[0], tc.warning)
		})
	}
}
