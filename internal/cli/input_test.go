package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadAll(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), (pipeReadSize+pipeReadSize/2)/16) // past the first capacity
	for _, size := range []int{0, 1, 4096, len(big)} {
		want := big[:size]
		t.Run("reader", func(t *testing.T) {
			got, err := readAll(strings.NewReader(string(want)))
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "%d bytes", size)
		})
		t.Run("regular file", func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "in.yaml")
			require.NoError(t, os.WriteFile(name, want, 0o600))
			f, err := os.Open(name)
			require.NoError(t, err)
			defer func() { _ = f.Close() }()
			got, err := readAll(f)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "%d bytes", size)
		})
		t.Run("pipe", func(t *testing.T) {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			defer func() { _ = r.Close() }()
			go func() {
				_, _ = w.Write(want)
				_ = w.Close()
			}()
			got, err := readAll(r)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "%d bytes", size)
		})
	}
}
