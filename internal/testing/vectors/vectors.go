// Package vectors loads the hash test vectors in testdata/vectors, which the
// hashing, render-time and controller tests all check, so that every side of
// confighash is held to the same values.
package vectors

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/confighash/confighash/hashing"
)

// Vector is one test vector: a pod spec, the config objects it may consume in
// two forms, and the expected hash.
type Vector struct {
	// File is the vector's file name, set by Load.
	File        string `json:"-"`
	Description string `json:"description"`
	Namespace   string `json:"namespace"`
	// Key is the HMAC key as a key file holds it (KeyBytes trims it);
	// empty for the plain hash.
	Key     string         `json:"key,omitempty"`
	PodSpec corev1.PodSpec `json:"podSpec"`
	// Manifest holds the objects as a user writes them: YAML documents,
	// stringData, comments, any key order.
	Manifest string `json:"manifest"`
	// APIServer holds the same objects as the API server returns them: one
	// JSON object per line, base64 data, no stringData, server metadata.
	APIServer string `json:"apiServer"`
	Expected  string `json:"expected"`
	// RenderTime, when set, is what the render-time tools give: a use whose
	// object is absent from the stream is external and left out of the
	// render-time hash, while the cluster side encodes it as absent.
	RenderTime *RenderTime `json:"renderTime,omitempty"`
}

// RenderTime is the render-time view of a vector with external objects.
type RenderTime struct {
	Expected string   `json:"expected"`
	External []string `json:"external"`
}

// Dir returns the absolute path of testdata/vectors.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "vectors")
}

// Load reads every vector in Dir, sorted by file name.
func Load() ([]Vector, error) {
	out, err := loadEach(Dir(), func(v *Vector, file string) error {
		v.File = file
		return nil
	})
	if err == nil && len(out) == 0 {
		return nil, fmt.Errorf("no vectors in %s", Dir())
	}
	return out, err
}

// loadEach decodes, strictly, every *.yaml file in dir, sorted by name, and
// hands each with its base name to keep, which may refuse it.
func loadEach[T any](dir string, keep func(v *T, file string) error) ([]T, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := make([]T, 0, len(files))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var v T
		if err := yaml.UnmarshalStrict(raw, &v); err != nil {
			return nil, fmt.Errorf("vector %s: %w", f, err)
		}
		if err := keep(&v, filepath.Base(f)); err != nil {
			return nil, fmt.Errorf("vector %s: %w", f, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// ManifestContents decodes the manifest form into canonical contents.
func (v Vector) ManifestContents() ([]hashing.Content, error) {
	return decodeAll(splitYAML(v.Manifest), v.Namespace)
}

// APIServerContents decodes the API-server form into canonical contents.
func (v Vector) APIServerContents() ([]hashing.Content, error) {
	var docs []string
	for _, line := range strings.Split(v.APIServer, "\n") {
		if strings.TrimSpace(line) != "" {
			docs = append(docs, line)
		}
	}
	return decodeAll(docs, v.Namespace)
}

// KeyBytes is the HMAC key the vector's key file gives (hashing.TrimKey).
func (v Vector) KeyBytes() []byte { return hashing.TrimKey([]byte(v.Key)) }

// Compute hashes the vector's pod spec against contents.
func (v Vector) Compute(contents []hashing.Content) string {
	return hashing.Compute(v.Namespace, hashing.Discover(&v.PodSpec), Index(contents), hashing.Options{Key: v.KeyBytes()})
}

// Index returns a Lookup over contents.
func Index(contents []hashing.Content) hashing.Lookup {
	return func(kind hashing.Kind, name string) (hashing.Content, bool) {
		for _, c := range contents {
			if c.Kind == kind && c.Name == name {
				return c, true
			}
		}
		return hashing.Content{}, false
	}
}

func splitYAML(s string) []string {
	var docs []string
	for _, d := range strings.Split("\n"+s, "\n---") {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, d)
		}
	}
	return docs
}

func decodeAll(docs []string, namespace string) ([]hashing.Content, error) {
	var out []hashing.Content
	for i, d := range docs {
		c, err := decode([]byte(d), namespace)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func decode(doc []byte, namespace string) (hashing.Content, error) {
	var meta struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return hashing.Content{}, err
	}
	var c hashing.Content
	switch meta.Kind {
	case "ConfigMap":
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal(doc, &cm); err != nil {
			return c, err
		}
		var err error
		if c, err = hashing.ConfigMapContent(&cm); err != nil {
			return c, err
		}
	case "Secret":
		var s corev1.Secret
		if err := yaml.Unmarshal(doc, &s); err != nil {
			return c, err
		}
		c = hashing.SecretContent(&s)
	default:
		return c, fmt.Errorf("kind %q is not a ConfigMap or Secret", meta.Kind)
	}
	if c.Namespace == "" {
		c.Namespace = namespace
	}
	if c.Namespace != namespace {
		return c, fmt.Errorf("%s %s is not in namespace %s", c.Kind, c.Name, namespace)
	}
	return c, nil
}

// Rejected is a vector of input every side must refuse: config objects that
// break a rule of HASHING.md section 3.
type Rejected struct {
	// File is the vector's file name, set by LoadRejected.
	File        string `json:"-"`
	Description string `json:"description"`
	// Manifest holds the objects as a user writes them.
	Manifest string `json:"manifest"`
	// Error is a part of the message the tools give.
	Error string `json:"error"`
}

// LoadRejected reads every vector in Dir()/rejected, sorted by file name.
func LoadRejected() ([]Rejected, error) {
	return loadEach(filepath.Join(Dir(), "rejected"), func(v *Rejected, file string) error {
		if v.Manifest == "" || v.Error == "" {
			return errors.New("manifest and error are required")
		}
		v.File = file
		return nil
	})
}
