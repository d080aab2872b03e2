package postrenderer_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/postrenderer"
)

// TestSecretValuesStayOutOfErrors feeds stream mode Secrets it must refuse,
// each holding a recognisable value, and checks that the error names the
// document and never shows the value, written out or in base64. yaml.v3
// quotes the name of an alias that has no anchor ("unknown anchor 'x'
// referenced"), and an unquoted value that starts with "*", a password
// say, is such an alias: the message showed the password.
func TestSecretValuesStayOutOfErrors(t *testing.T) {
	const canary = "CANARY-s3cr3t"
	const deploy = "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        envFrom:\n        - secretRef: {name: creds}\n"
	secret := func(fields string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n" + fields + deploy
	}
	encoded := base64.StdEncoding.EncodeToString([]byte(canary))
	for _, tc := range []struct{ name, input, err string }{
		{"not base64", secret("data:\n  token: " + canary + "\n"), "Secret shop/creds (document 0): data.token: not valid base64"},
		{"a map for a value", secret("stringData:\n  token: {" + canary + ": x}\n"), "Secret shop/creds (document 0): stringData.token: expected a string"},
		{"a key written twice", secret("data:\n  token: " + encoded + "\n  token: " + encoded + "\n"), `document 0: data: key "token" appears twice`},
		{"a value that starts with *", secret("stringData:\n  token: *" + canary + "\n"), `document 0: line 6: an alias ("*" and a name) that no anchor of this document defines`},
		{"an alias in a flow mapping", secret("stringData: {a: x, token: *" + canary + "}\n"), `document 0: line 5: an alias ("*" and a name) that no anchor of this document defines`},
		{"an unclosed quote", secret("stringData:\n  token: \"" + canary + "\n"), "document 0: yaml: line"},
		{"a JSON Secret, then another object", `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "data": {"token": "` + encoded + `"}}` + "\n{}\n" + deploy,
			`document 0: another document follows this one without a "---" line`},
		{"a Secret on the marker line", "--- " + `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "data": {"token": "` + encoded + `"}}` + "\n" + deploy,
			`document 0: line 1: text after the document marker "---"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := postrenderer.Process([]byte(tc.input), inject.Options{DefaultNamespace: namespace})
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
			if out != nil {
				t.Errorf("output on error:\n%s", out)
			}
			for _, v := range []string{canary, encoded, "CANARY"} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("the error shows the Secret's value %q: %v", v, err)
				}
			}
		})
	}
}
