package cli

import (
	"errors"
	"io"
	"os"
)

// pipeReadSize is the capacity readAll starts with when the input's size
// is unknown (a pipe, as Helm gives a post-renderer). It is address space
// rather than memory: the runtime takes a block that large from the
// operating system untouched, and only the pages the input fills are ever
// mapped, so a small input costs what it is while a render of a few
// megabytes is read without the copies of a growing buffer.
const pipeReadSize = 8 << 20

// readAll reads r to its end into one slice. A regular file is read into
// a slice of its size; anything else into a large slice that doubles when
// full. (io.ReadAll collects a pipe's bytes in growing chunks and then copies
// them into one slice: about three times the input in fresh memory, each
// page of it a fault, which on a 2 MB render costs more than hashing it.)
func readAll(r io.Reader) ([]byte, error) {
	size := pipeReadSize
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = int(fi.Size()) + 1 // +1: the read that sees the end
		}
	}
	b := make([]byte, 0, size)
	for {
		if len(b) == cap(b) {
			grown := make([]byte, len(b), 2*cap(b)+512)
			copy(grown, b)
			b = grown
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
