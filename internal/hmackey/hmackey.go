// Package hmackey loads the HMAC key of the keyed hash mode (section 5 of
// hashing/HASHING.md) the same way for every command: bin/confighash, the
// controller and kubectl confighash status.
package hmackey

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/confighash/confighash/hashing"
)

// The environment variables that give the key when no file is named.
const (
	// EnvFile names a file holding the key.
	EnvFile = "CONFIGHASH_HMAC_KEY_FILE"
	// EnvKey holds the key itself.
	EnvKey = "CONFIGHASH_HMAC_KEY"
)

// Load returns the key: from file when it is not empty, else from the file
// $CONFIGHASH_HMAC_KEY_FILE names, else $CONFIGHASH_HMAC_KEY itself, each
// without the white space around it (hashing.TrimKey). No key at all (an
// empty or unset variable) means the plain hash; a key file, or a variable,
// that holds only white space is an error, as it is a key that went missing
// on its way (an empty Secret value, say) more often than a choice. getenv
// is os.Getenv, or a test's environment. Errors never hold the key.
func Load(file string, getenv func(string) string) ([]byte, error) {
	if file == "" {
		if file = getenv(EnvFile); file != "" {
			key, err := ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("$%s: %w", EnvFile, err)
			}
			return key, nil
		}
	}
	if file == "" {
		raw := getenv(EnvKey)
		key := hashing.TrimKey([]byte(raw))
		if len(key) == 0 && raw != "" {
			return nil, fmt.Errorf("$%s holds only white space: set it to the key, or unset it for the plain hash", EnvKey)
		}
		return key, nil
	}
	return ReadFile(file)
}

// ReadFile reads a key file: its content without the white space around it.
// A file that holds nothing else is an error, not the plain hash. A missing
// file named by a relative path is an error that names the folder it was
// looked for in: kustomize runs an exec function in the kustomization's
// folder, not where kustomize was started.
func ReadFile(file string) ([]byte, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		if dir, werr := os.Getwd(); werr == nil && !filepath.IsAbs(file) && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading the HMAC key: %w (a relative path, looked for in %s)", err, dir)
		}
		return nil, fmt.Errorf("reading the HMAC key: %w", err)
	}
	key := hashing.TrimKey(raw)
	if len(key) == 0 {
		return nil, fmt.Errorf("the HMAC key file %s is empty", file)
	}
	return key, nil
}
