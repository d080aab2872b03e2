// Package statustest reads what kubectl confighash status --json prints, for
// the tests of the command and of the examples that check a cluster with it.
// It is test support: product packages do not import it. It is a package of
// its own because it imports internal/status (and through it the
// controller), which the other test helpers must not pull in.
package statustest

import (
	"encoding/json"
	"testing"

	"github.com/confighash/confighash/internal/status"
)

// Workloads decodes the report kubectl confighash status --json printed and
// returns its workloads by Kind/name.
func Workloads(t testing.TB, out string) map[string]status.Workload {
	t.Helper()
	var report status.Report
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("kubectl confighash status --json: %v\n%s", err, out)
	}
	workloads := map[string]status.Workload{}
	for _, w := range report.Workloads {
		workloads[w.Kind+"/"+w.Name] = w
	}
	return workloads
}
