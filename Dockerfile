# syntax=docker/dockerfile:1
# Two images from one file, both a static binary running as UID 65532:
#   function    the KRM function / post-renderer (bin/confighash)
#   controller  the controller (bin/confighash-controller)
#
# With a registry reachable (the release build), Go compiles in the build
# stage and the binaries ship on distroless:
#   docker build --target function   --build-arg VERSION=v0.1.0 -t confighash:v0.1.0 .
#   docker build --target controller --build-arg VERSION=v0.1.0 -t confighash-controller:v0.1.0 .
#
# Without one (air-gapped machines, CI here), `make image` compiles the static
# binaries on the host into bin/image/ and builds the same targets with
#   --build-arg BINARIES=local --build-arg BASE=local-base
# so nothing is pulled: the binaries land on an empty base that carries only
# passwd/group entries for nonroot (65532) and nobody (65534, the user
# kustomize runs container functions as). docs/container.md has the details.

# gcr.io/distroless/static-debian12:nonroot
ARG BASE=gcr.io/distroless/static-debian12@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
# golang:1.26
ARG BUILDER=golang@sha256:595c7847cff97c9a9e76f015083c481d26078f961c9c8dca3923132f51fe12f1
# build: compile in the BUILDER stage; local: take bin/image/ from the context.
ARG BINARIES=build

FROM ${BUILDER} AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN mkdir -p /out \
 && go build -ldflags "-s -w -X github.com/confighash/confighash/internal/cli.Version=${VERSION}" -o /out/confighash ./cmd/confighash \
 && go build -ldflags "-s -w -X github.com/confighash/confighash/internal/cli.Version=${VERSION}" -o /out/confighash-controller ./cmd/confighash-controller

# The binaries `make image-binaries` built on the host (CGO_ENABLED=0).
FROM scratch AS local
COPY bin/image/confighash bin/image/confighash-controller /out/

# An empty base with the users distroless's :nonroot has.
FROM scratch AS local-base
COPY hack/image/rootfs/ /

FROM ${BINARIES} AS binaries

# What both images share: the labels but title and description, the user.
FROM ${BASE} AS image
ARG VERSION=dev
LABEL org.opencontainers.image.source="https://github.com/confighash/confighash" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532

FROM image AS function
LABEL org.opencontainers.image.title="confighash" \
      org.opencontainers.image.description="confighash KRM function and Helm post-renderer"
COPY --from=binaries /out/confighash /usr/local/bin/confighash
ENTRYPOINT ["/usr/local/bin/confighash"]

FROM image AS controller
LABEL org.opencontainers.image.title="confighash-controller" \
      org.opencontainers.image.description="confighash controller: rolls workloads when their config is edited out of band"
COPY --from=binaries /out/confighash-controller /usr/local/bin/confighash-controller
ENTRYPOINT ["/usr/local/bin/confighash-controller"]
