package yamlnode

import (
	"bytes"
	"fmt"
)

// byteOrderMarks are the byte order marks of the encodings other than
// UTF-8, the longer first (UTF-32LE's starts with UTF-16LE's).
var byteOrderMarks = []struct {
	bom  string
	name string
}{
	{"\x00\x00\xfe\xff", "UTF-32"},
	{"\xff\xfe\x00\x00", "UTF-32"},
	{"\xfe\xff", "UTF-16"},
	{"\xff\xfe", "UTF-16"},
}

// CheckEncoding returns an error when input starts with the byte order
// mark of UTF-16 or UTF-32 (what Windows PowerShell 5's ">" writes), or
// holds one further on. yaml.v3 decodes a document that starts with a
// UTF-16 byte order mark from UTF-16, but confighash splits the stream
// into documents and edits it as UTF-8: a stream in UTF-16 read as one
// document, whose other workloads went unseen, and was written back with
// no hash. The bytes FE and FF are never part of UTF-8, so such a mark is
// never part of a UTF-8 text.
func CheckEncoding(input []byte) error {
	for _, m := range byteOrderMarks {
		if bytes.HasPrefix(input, []byte(m.bom)) {
			return fmt.Errorf("the input is %s (it starts with the byte order mark % X): confighash reads UTF-8, "+
				"as kubectl, kustomize and Helm write it; convert it first (iconv -f %s -t UTF-8)", m.name, m.bom, m.name)
		}
	}
	first := -1
	for _, m := range byteOrderMarks {
		if m.name != "UTF-16" {
			continue
		}
		if i := bytes.Index(input, []byte(m.bom)); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first < 0 {
		return nil
	}
	return AtLine(LineOf(input, first), fmt.Errorf("a UTF-16 byte order mark (% X) inside the stream, before text in UTF-16: confighash reads "+
		"UTF-8 only; convert that part (iconv -f UTF-16 -t UTF-8)", input[first:first+2]))
}
