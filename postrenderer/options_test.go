package postrenderer_test

import (
	"strings"
	"testing"

	"github.com/confighash/confighash/postrenderer"
)

// TestNewChecksNamespace: the SDK post-renderer refuses a namespace no object
// can have, as the executable refuses its --namespace flag; the hash covers
// the namespace, so one with a typo would hash for nothing.
func TestNewChecksNamespace(t *testing.T) {
	cases := []struct {
		namespace string
		ok        bool
	}{
		{"", true},
		{"shop", true},
		{"team-1", true},
		{"Shop", false},
		{"shop ", false},
		{"web.shop", false},
		{"-shop", false},
		{strings.Repeat("a", 64), false},
	}
	for _, tc := range cases {
		t.Run(tc.namespace, func(t *testing.T) {
			_, err := postrenderer.New(postrenderer.Options{Namespace: tc.namespace})
			if tc.ok && err != nil {
				t.Errorf("New refused namespace %q: %v", tc.namespace, err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "namespace")) {
				t.Errorf("New accepted namespace %q (error %v)", tc.namespace, err)
			}
		})
	}
}
