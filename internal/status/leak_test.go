package status_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/confighash/confighash/internal/status"
)

// TestKubeconfigValueNeverShown: a kubeconfig whose token YAML cannot read
// (a value tagged !!int, an unquoted value that starts with "*") fails
// status with an error naming the file, without the token: client-go
// passes on YAML's error, which quotes it.
func TestKubeconfigValueNeverShown(t *testing.T) {
	const token = "CANARY-t0ken"
	for _, user := range []string{
		"token: !!int " + token, "token: !!bool " + token, "token: !!timestamp " + token,
		"token: *" + token, "password: !!float " + token + "\n    username: u",
	} {
		// The test's name, in its temporary folder, leaves the token out.
		t.Run(strings.ReplaceAll(user, token, "TOKEN"), func(t *testing.T) {
			kubeconfig := filepath.Join(t.TempDir(), "config")
			cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\"}\n" +
				"users:\n- name: u\n  user:\n    " + user + "\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
			if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := status.Main([]string{"status", "--kubeconfig", kubeconfig}, &out, &errb, func(string) string { return "" })
			if code != 1 || !strings.Contains(errb.String(), "loading the kubeconfig: error loading config file \""+kubeconfig+"\": yaml: ") {
				t.Fatalf("exit %d, want 1 and an error loading %s:\n%s", code, kubeconfig, errb.String())
			}
			if strings.Contains(out.String()+errb.String(), "CANARY") {
				t.Errorf("the error shows the token:\n%s", errb.String())
			}
		})
	}
}
