package controllercmd_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/internal/controllercmd"
)

// TestNewLogger: JSON or text lines; V(1) shows at level debug, as DEBUG.
func TestNewLogger(t *testing.T) {
	tests := []struct {
		format, level string
		wantDebug     bool
	}{
		{"json", "info", false},
		{"json", "debug", true},
		{"text", "info", false},
		{"text", "debug", true},
	}
	for _, tc := range tests {
		t.Run(tc.format+"-"+tc.level, func(t *testing.T) {
			var b bytes.Buffer
			log := controllercmd.NewLogger(&b, tc.format, tc.level)
			log.Info("started", "kinds", 4)
			log.V(1).Info("details")
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if tc.wantDebug {
				require.Len(t, lines, 2)
			} else {
				require.Len(t, lines, 1)
			}
			if tc.format == "json" {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(lines[0]), &m))
				assert.Equal(t, "started", m["msg"])
				assert.Equal(t, "INFO", m["level"])
				assert.InDelta(t, 4.0, m["kinds"], 0)
				if tc.wantDebug {
					require.NoError(t, json.Unmarshal([]byte(lines[1]), &m))
					assert.Equal(t, "DEBUG", m["level"])
				}
				return
			}
			assert.Contains(t, lines[0], "level=INFO msg=started kinds=4")
			if tc.wantDebug {
				assert.Contains(t, lines[1], "level=DEBUG msg=details")
			}
		})
	}
}
