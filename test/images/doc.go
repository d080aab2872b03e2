// Package images tests the container images that `make image` builds from
// the Dockerfile: the function image through kustomize's container-function
// path, and the controller image against the local control plane, run the
// way a cluster runs it (non-root, read-only root filesystem, no
// capabilities).
//
// The tests find podman or docker (or $CONFIGHASH_CONTAINER_ENGINE), build
// the images once per run with `make image`, and skip with a message when no
// engine can build and run them; with CONFIGHASH_REQUIRE_IMAGES set (as
// .ci/run sets it) that is a failure. hack/podman.sh configures podman on
// machines where its defaults do not work. The package holds tests only.
package images
