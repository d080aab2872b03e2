package hashing_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/hashing"
)

// entry is one key fed to a ContentBuilder, as a manifest writes it.
type entry struct {
	field      hashing.Field
	key, value string
}

func TestContentBuilder(t *testing.T) {
	d := func(s string) hashing.Digest { return hashing.DigestOf([]byte(s)) }
	tests := []struct {
		name    string
		kind    hashing.Kind
		entries []entry
		want    map[string]hashing.Digest
		err     string
	}{
		{"ConfigMap data and binaryData", hashing.KindConfigMap,
			[]entry{{"data", "a", "x"}, {"binaryData", "b", "AAE="}},
			map[string]hashing.Digest{"a": d("x"), "b": d("\x00\x01")}, ""},
		{"ConfigMap binaryData first", hashing.KindConfigMap,
			[]entry{{"binaryData", "b", "YQ=="}, {"data", "a", "x"}},
			map[string]hashing.Digest{"a": d("x"), "b": d("a")}, ""},
		{"unused bits ignored", hashing.KindConfigMap,
			[]entry{{"binaryData", "b", "YR=="}}, map[string]hashing.Digest{"b": d("a")}, ""},
		{"folded base64", hashing.KindSecret,
			[]entry{{"data", "p", "YW\r\nJj"}}, map[string]hashing.Digest{"p": d("abc")}, ""},
		{"key in both data and binaryData", hashing.KindConfigMap,
			[]entry{{"data", "k", "x"}, {"binaryData", "k", "eA=="}}, nil, `key "k" is in both data and binaryData`},
		{"key in both, binaryData first", hashing.KindConfigMap,
			[]entry{{"binaryData", "k", "eA=="}, {"data", "k", "x"}}, nil, `key "k" is in both data and binaryData`},
		{"key twice in data", hashing.KindConfigMap,
			[]entry{{"data", "k", "x"}, {"data", "k", "y"}}, nil, `data: key "k" appears twice`},
		{"key twice in the second field", hashing.KindSecret,
			[]entry{{"data", "k", "eA=="}, {"stringData", "k", "y"}, {"stringData", "k", "z"}}, nil, `stringData: key "k" appears twice`},
		{"key twice in data after stringData", hashing.KindSecret,
			[]entry{{"stringData", "k", "y"}, {"data", "k", "eA=="}, {"data", "k", "eA=="}}, nil, `data: key "k" appears twice`},
		{"stringData over data", hashing.KindSecret,
			[]entry{{"data", "k", "eA=="}, {"data", "o", "eA=="}, {"stringData", "k", "y"}},
			map[string]hashing.Digest{"k": d("y"), "o": d("x")}, ""},
		{"stringData over data written after it", hashing.KindSecret,
			[]entry{{"stringData", "k", "y"}, {"data", "k", "eA=="}},
			map[string]hashing.Digest{"k": d("y")}, ""},
		{"base64 still checked under stringData", hashing.KindSecret,
			[]entry{{"stringData", "k", "y"}, {"data", "k", "%%%%"}}, nil, "data.k: not valid base64"},
		{"missing padding", hashing.KindSecret,
			[]entry{{"data", "k", "YQ"}}, nil, "data.k: not valid base64"},
		{"data after the padding", hashing.KindConfigMap,
			[]entry{{"binaryData", "k", "YQ==YQ=="}}, nil, "binaryData.k: not valid base64"},
		{"stringData on a ConfigMap", hashing.KindConfigMap,
			[]entry{{"stringData", "k", "x"}}, nil, "stringData is not a field of a ConfigMap"},
		{"binaryData on a Secret", hashing.KindSecret,
			[]entry{{"binaryData", "k", "eA=="}}, nil, "binaryData is not a field of a Secret"},
		{"a field fed again", hashing.KindConfigMap,
			[]entry{{"data", "a", "x"}, {"binaryData", "b", "eA=="}, {"data", "c", "x"}}, nil, "data appears twice"},
		{"empty", hashing.KindSecret, nil, map[string]hashing.Digest{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := hashing.NewContentBuilder(tt.kind)
			var err error
			for _, e := range tt.entries {
				if err = b.Add(e.field, e.key, []byte(e.value)); err != nil {
					break
				}
			}
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			got := b.Done()
			assert.Equal(t, tt.kind, got.Kind)
			assert.Equal(t, tt.want, got.Keys)
		})
	}
}

// TestContentBuilderErrorsHideValues: no error quotes a value.
func TestContentBuilderErrorsHideValues(t *testing.T) {
	const secret = "c2VjcmV0LXBhc3N3b3Jk!"
	b := hashing.NewContentBuilder(hashing.KindSecret)
	err := b.Add(hashing.FieldData, "k", []byte(secret))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "c2VjcmV0")
}

// TestContentBuilderReset: a reused builder starts afresh and leaves the
// content it returned before untouched.
func TestContentBuilderReset(t *testing.T) {
	b := hashing.NewContentBuilder(hashing.KindSecret)
	require.NoError(t, b.Add(hashing.FieldData, "k", []byte("eA==")))
	first := b.Done()
	b.Reset(hashing.KindConfigMap)
	require.NoError(t, b.Add(hashing.FieldBinaryData, "k", []byte("eQ==")))
	second := b.Done()
	assert.Equal(t, hashing.DigestOf([]byte("x")), first.Keys["k"])
	assert.Equal(t, hashing.DigestOf([]byte("y")), second.Keys["k"])
	assert.Equal(t, hashing.KindConfigMap, second.Kind)
}

// TestFieldsOfKinds: the content fields each kind has.
func TestFieldsOfKinds(t *testing.T) {
	assert.Equal(t, []hashing.Field{hashing.FieldData, hashing.FieldBinaryData}, hashing.KindConfigMap.Fields())
	assert.Equal(t, []hashing.Field{hashing.FieldData, hashing.FieldStringData}, hashing.KindSecret.Fields())
	assert.Empty(t, hashing.Kind("Pod").Fields())
}
