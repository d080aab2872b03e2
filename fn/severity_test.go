package fn

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/confighash/confighash/internal/inject"
)

func TestSeverity(t *testing.T) {
	for in, want := range map[inject.Severity]framework.Severity{
		inject.SeverityError:   framework.Error,
		inject.SeverityWarning: framework.Warning,
		inject.SeverityInfo:    framework.Info,
	} {
		assert.Equal(t, want, severity(in))
		assert.Equal(t, string(want), string(in), "the KRM result carries the finding's own word")
	}
}
