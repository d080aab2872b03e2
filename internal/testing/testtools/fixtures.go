package testtools

import (
	"fmt"
	"os"
	"path/filepath"
)

// ExecFunctionConfig is a confighash functionConfig with no options that
// kustomize runs as the exec function at path (kustomize build
// --enable-alpha-plugins --enable-exec).
func ExecFunctionConfig(path string) string {
	return fmt.Sprintf(`apiVersion: confighash.dev/v1alpha1
kind: ConfigHash
metadata:
  name: confighash
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: %s
`, path)
}

// CopyTree copies the files below src to dst, creating dst and the folders
// below it. Each file's content goes through edit (when not nil), which gets
// the path relative to src and the path it is written to.
func CopyTree(src, dst string, edit func(rel, to string, b []byte) ([]byte, error)) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if edit != nil {
			if b, err = edit(rel, to, b); err != nil {
				return err
			}
		}
		return os.WriteFile(to, b, 0o644)
	})
}
