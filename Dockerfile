# syntax=docker/dockerfile:1
# One build stage, two small images:
#   docker build --target function   -t confighash:fn .    (KRM function / post-renderer)
#   docker build --target controller -t confighash-controller .
# Both are static binaries on distroless, running as a non-root user.

FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN go build -ldflags "-s -w -X github.com/confighash/confighash/internal/cli.Version=${VERSION}" -o /out/confighash ./cmd/confighash \
 && go build -ldflags "-s -w" -o /out/confighash-controller ./cmd/confighash-controller

FROM gcr.io/distroless/static-debian12:nonroot AS function
COPY --from=build /out/confighash /usr/local/bin/confighash
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/confighash"]

FROM gcr.io/distroless/static-debian12:nonroot AS controller
COPY --from=build /out/confighash-controller /usr/local/bin/confighash-controller
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/confighash-controller"]
