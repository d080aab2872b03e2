// Command confighash is the render-time tool: a KRM function for kustomize and
// kpt, and a Helm post-renderer. See internal/cli.
package main

import (
	"os"
	"runtime"
	"runtime/debug"

	"github.com/confighash/confighash/internal/cli"
)

// firstGCPercent is the GOGC in force until the first garbage collection: the
// runtime's 4 MB minimum heap times 8, 32 MB.
const firstGCPercent = 800

func main() {
	deferFirstGC()
	os.Exit(cli.Run(os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

// deferFirstGC lets the heap grow to about 32 MB before the first garbage
// collection, then restores the GOGC in force. A render of a few megabytes
// (Argo CD's 1.9 MB install allocates about 8 MB, its input included) then
// exits without collecting at all: each collection there costs more CPU than
// it frees, more so on a busy machine where the idle mark workers compete
// for the cores. A larger input is collected as before once past 32 MB, so
// its peak memory is what it was, give or take that. GOGC set in the
// environment is left alone.
func deferFirstGC() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	prev := debug.SetGCPercent(firstGCPercent)
	sentinel := new([64]byte)
	runtime.AddCleanup(sentinel, func(percent int) { debug.SetGCPercent(percent) }, prev)
}
