# confighash — run `make help` for the targets.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
export GOTOOLCHAIN := local

BIN := $(CURDIR)/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/confighash/confighash/internal/cli.Version=$(VERSION)

# Pinned tools, installed into ./bin on first use.
KUSTOMIZE_VERSION := v5.8.2
HELM3_VERSION := v3.22.0
HELM4_VERSION := v4.3.1
GOLANGCI_LINT_VERSION := v2.15.0

KUSTOMIZE := $(BIN)/kustomize
HELM3 := $(BIN)/helm3
HELM4 := $(BIN)/helm4
GOLANGCI_LINT := $(BIN)/golangci-lint

# The tests find the tools and the shared corpus through these.
export CONFIGHASH_BIN := $(BIN)
export KUSTOMIZE HELM3 HELM4

FUZZTIME ?= 10s
# How long the fuzzer may spend shrinking each new interesting input (Go's
# default, 60s, can take a whole short run: FuzzProcess then stood still for
# 20 to 40 s at a time, minimising, with no call slower than a second).
# hack/fuzz.sh runs the targets.
FUZZMINIMIZETIME ?= 1s
# Every package with a fuzz target.
FUZZ_PKGS := $(addprefix ./,$(sort $(dir $(shell grep -rl --include=*_test.go "^func Fuzz" hashing internal postrenderer controller fn))))

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
# bin/confighash is static (no libc): Helm starts a post-renderer on every render, and a
# dynamically linked Go binary takes about 3 ms longer to start (docs/benchmarks.md).
build: ## Build bin/confighash, bin/confighash-controller and bin/kubectl-confighash (the kubectl plugin).
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/confighash ./cmd/confighash
	@if [ -d cmd/confighash-controller ]; then go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/confighash-controller ./cmd/confighash-controller; fi
	go build -trimpath -o $(BIN)/kubectl-confighash ./cmd/kubectl-confighash

.PHONY: tools
tools: $(KUSTOMIZE) $(HELM3) $(HELM4) ## Install the pinned kustomize and helm (v3, v4) into bin/.

$(KUSTOMIZE):
	@echo ">> installing kustomize $(KUSTOMIZE_VERSION) into bin/"
	GOBIN=$(BIN) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

$(HELM3):
	@echo ">> installing helm $(HELM3_VERSION) into bin/helm3"
	@tmp=$$(mktemp -d) && GOBIN=$$tmp go install helm.sh/helm/v3/cmd/helm@$(HELM3_VERSION) && mv $$tmp/helm $@ && rmdir $$tmp

$(HELM4):
	@echo ">> installing helm $(HELM4_VERSION) into bin/helm4"
	@tmp=$$(mktemp -d) && GOBIN=$$tmp go install helm.sh/helm/v4/cmd/helm@$(HELM4_VERSION) && mv $$tmp/helm $@ && rmdir $$tmp

$(GOLANGCI_LINT):
	@echo ">> installing golangci-lint $(GOLANGCI_LINT_VERSION) into bin/"
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: controlplane
controlplane: ## Build etcd, kube-apiserver, kube-controller-manager and kubectl into bin/ (once; minutes when cold).
	BIN_DIR=$(BIN) bash hack/build-controlplane.sh

.PHONY: fmt
fmt: ## Format the code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint (config in .golangci.yml).
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...

.PHONY: lint-docker
lint-docker: ## Lint the Dockerfile (dockerfilelint from npm, pinned; no Docker engine needed).
	@test -x $(BIN)/npm/node_modules/.bin/dockerfilelint || npm install --silent --prefix $(BIN)/npm dockerfilelint@1.8.0
	$(BIN)/npm/node_modules/.bin/dockerfilelint Dockerfile

.PHONY: check-fmt
check-fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

.PHONY: test
test: build tools controlplane check-fmt vet lint tidy-check crosscheck ## Build, lint, then run every test (real kustomize, helm, control plane) and a short fuzz run.
	go test -count=1 -race -timeout 45m ./...
	$(MAKE) test-examples
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME)

# Example modules with a go.mod of their own (go test ./... above does not
# enter them): examples/helm-sdk depends on the Helm SDKs, the main module not.
EXAMPLE_MODULES := examples/helm-sdk

.PHONY: test-examples
test-examples: ## Tidy check, vet and test the example modules that have their own go.mod (examples/helm-sdk).
	@for m in $(EXAMPLE_MODULES); do \
	  echo ">> $$m: go mod tidy -diff, go vet, go test"; \
	  (cd $$m && go mod tidy -diff && go vet ./... && go test -count=1 ./...) || exit 1; \
	done

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 10s).
	FUZZTIME=$(FUZZTIME) FUZZMINIMIZETIME=$(FUZZMINIMIZETIME) hack/fuzz.sh $(FUZZ_PKGS)

.PHONY: bench
bench: build tools ## Benchmarks, printed as ratios against floors measured in the same run (BENCH_FLAGS: see go run ./hack/bench -h).
	@corpus=$${CONFIGHASH_CORPUS:-}; \
	  if [ -z "$$corpus" ] && [ -d ../shared/corpus ]; then corpus=$$(cd ../shared/corpus && pwd); fi; \
	  echo "CONFIGHASH_CORPUS=$$corpus go run ./hack/bench $(BENCH_FLAGS)"; \
	  CONFIGHASH_CORPUS=$$corpus go run ./hack/bench $(BENCH_FLAGS)

.PHONY: demo
demo: build tools ## Render the seed demo, change its ConfigMap, render again and show what changed.
	bash hack/demo.sh

.PHONY: tidy-check
tidy-check: ## Fail when go mod tidy would change go.mod or go.sum (direct dependencies must not be marked // indirect).
	@tmp=$$(mktemp -d) && cp go.mod go.sum $$tmp/ && go mod tidy && \
	  if ! diff -u $$tmp/go.mod go.mod || ! diff -u $$tmp/go.sum go.sum; then \
	    cp $$tmp/go.mod $$tmp/go.sum . ; rm -rf $$tmp; echo "go mod tidy changes go.mod/go.sum: run it and commit the result" >&2; exit 1; fi; \
	  rm -rf $$tmp

# PYTHON is the first python3 that has PyYAML (Debian's python3-yaml lands in /usr/bin/python3).
PYTHON ?= $(shell for p in python3 /usr/bin/python3; do $$p -c 'import yaml' 2>/dev/null && { command -v $$p; break; }; done)

.PHONY: crosscheck
crosscheck: ## Check testdata/vectors against hack/crosscheck-vectors.py, an independent implementation of HASHING.md.
	@if [ -z "$(PYTHON)" ]; then \
	  echo "crosscheck: skipped, it needs python3 with PyYAML (Debian: apt-get install python3-yaml)" >&2; \
	  if [ -n "$${CONFIGHASH_REQUIRE_TOOLS:-}" ]; then echo "crosscheck: CONFIGHASH_REQUIRE_TOOLS is set" >&2; exit 1; fi; \
	else $(PYTHON) hack/crosscheck-vectors.py; fi

# Images (docs/container.md). IMAGE_FROM=local (the default) compiles static
# binaries here into bin/image/ and puts them on an empty base with the users
# the images need: nothing is pulled, so it works without a registry.
# IMAGE_FROM=registry builds from the Dockerfile's defaults (Go in a builder
# image, distroless base), as a release with registry access does.
CONTAINER_ENGINE ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
IMAGE_FROM ?= local
IMAGE_REGISTRY ?= ghcr.io/confighash
FUNCTION_IMAGE ?= $(IMAGE_REGISTRY)/confighash:$(VERSION)
CONTROLLER_IMAGE ?= $(IMAGE_REGISTRY)/confighash-controller:$(VERSION)
IMAGE_BUILD_ARGS := --build-arg VERSION=$(VERSION)
ifeq ($(IMAGE_FROM),local)
IMAGE_BUILD_ARGS += --build-arg BINARIES=local --build-arg BASE=local-base
else ifneq ($(IMAGE_FROM),registry)
$(error IMAGE_FROM must be local or registry, not $(IMAGE_FROM))
endif

.PHONY: image
image: $(if $(filter local,$(IMAGE_FROM)),image-binaries) ## Build the function and controller images (FUNCTION_IMAGE, CONTROLLER_IMAGE) with podman or docker.
	@test -n "$(CONTAINER_ENGINE)" || { echo "make image: no podman or docker on PATH (hack/podman.sh install)" >&2; exit 1; }
	$(CONTAINER_ENGINE) build --target function $(IMAGE_BUILD_ARGS) -t $(FUNCTION_IMAGE) .
	$(CONTAINER_ENGINE) build --target controller $(IMAGE_BUILD_ARGS) -t $(CONTROLLER_IMAGE) .

.PHONY: image-binaries
image-binaries: ## Static binaries (CGO_ENABLED=0) for the local image build, in bin/image/.
	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w $(LDFLAGS)' -o $(BIN)/image/confighash ./cmd/confighash
	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w $(LDFLAGS)' -o $(BIN)/image/confighash-controller ./cmd/confighash-controller

.PHONY: clean
clean: ## Remove bin/.
	rm -rf $(BIN)
