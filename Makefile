# provider-tencentcloud-network
#
# Tools run as `go tool` entries of tools/go.mod: nothing is installed
# globally, and the Go build cache keeps warm runs fast.

GO          ?= go
# Builds name files by module path, not by folder: a fresh clone elsewhere
# (CI's) then reuses the build cache instead of compiling every package of
# the module again. Binaries carry no DWARF (-w; stack traces keep their
# symbols): linking make test's 90 test binaries, which the build cache
# does not keep, costs a third less CPU.
export GOFLAGS := -trimpath -ldflags=-w $(GOFLAGS)
TOOL        := $(GO) tool -modfile=tools/go.mod
TEST_FLAGS  ?= -count=1 -timeout=50m
VERSION     ?= v0.1.0
OUTPUT      ?= _output
ARCHS       ?= amd64 arm64
comma       := ,
space       := $(subst ,, )
ARCH_LIST    = $(subst $(space),$(comma),$(strip $(ARCHS)))

.PHONY: okg argocd test-gitops all build generate check-generated check-files lint test test-unit test-node test-race reviewable demo demo-gitops controlplane node bench bench-scale bench-smoke bench-micro soak xpkg publish clean

all: build

build:
	$(GO) build ./...

## generate: deepcopy, CRDs (package/crds) and crossplane-runtime method sets.
generate:
	cd apis && $(GO) generate -tags generate ./...

## check-generated: fail when generated files are stale.
check-generated: generate
	@git diff --exit-code -- apis package || { echo "generated files are stale: run 'make generate' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- apis package)" || { git status --porcelain -- apis package; echo "generate left untracked files: run 'make generate' and commit"; exit 1; }

## check-files: no tracked file over 1 MiB (a built binary committed by
## mistake once made a whole submission too big to land).
check-files:
	@big=$$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > 1048576 {print $$2}'); \
	test -z "$$big" || { echo "tracked files over 1 MiB (build outputs belong in _output/ or .gitignore):"; echo "$$big"; exit 1; }

## lint: golangci-lint keys its cache by the files' paths, so a clone in
## another folder (a CI checkout) analysed every package again: 4 CPU-minutes
## on 2 cores instead of 4 seconds. It runs through one link in the cache
## folder instead, one lint at a time on a machine.
LINT_ROOT := $(HOME)/.cache/provider-tencentcloud-network/lint-root
lint:
	@mkdir -p $(dir $(LINT_ROOT))
	flock $(LINT_ROOT).lock sh -c 'ln -sfn "$(CURDIR)" $(LINT_ROOT) && cd $(LINT_ROOT) && $(TOOL) golangci-lint run ./...'


## test: what CI runs: generated code is current, lint passes, and every
## test passes (the local control plane is built or installed on first use
## by cluster/local/install.sh). The suites wait on API servers, the
## emulator and the node far more than they compute, so the node suites run
## beside the others, each target's output kept together.
test: check-files check-generated lint test-race
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-unit test-node

## SLOW_FIRST are the packages that take longest (test/podaddress about
## 7 minutes alone, 10 to 13 under make test's load, then the rest in
## order), started first so that none of them starts last and runs alone.
SLOW_FIRST := ./test/podaddress ./test/integration ./test/nat ./test/ingress \
	./test/crossplane ./test/reliability ./test/argocdhealth ./test/tenancy ./test/ippool

## UNIT_PARALLEL: test binaries test-unit runs at once. Its packages spend
## most of their time waiting, so 3 on a 2-core machine.
UNIT_PARALLEL ?= 3

## test-unit: every package but those of the real node, test/gitops and those
## test-race ran already (the race detector's run is the same tests).
test-unit:
	$(GO) test $(TEST_FLAGS) -p $(UNIT_PARALLEL) $(SLOW_FIRST) $$($(GO) list ./... | grep -v -e '/test/node$$' -e '/test/e2e$$' -e '/test/gitops$$' $(foreach p,$(RACE_PKGS),-e '$(patsubst ./%/...,/%,$(p))\(/\|$$\)') $(foreach p,$(SLOW_FIRST),-e '$(patsubst ./%,/%,$(p))$$'))

## test-node: the suites on the real node (internal/tooling/node; Linux and root),
## one package at a time: they share the machine's one node, and compare
## the machine's state before and after theirs. OpenKruiseGame is built first (okg).
test-node: okg
	$(GO) test $(TEST_FLAGS) -p 1 -v ./test/node ./test/e2e

## okg: build OpenKruiseGame's managers for TestOpenKruiseGame (test/e2e)
## into the cache, once per version (internal/tooling/okg).
okg:
	$(GO) run ./internal/tooling/okg/okgbuild

## argocd: Redis from Debian's package (cluster/local/redis.sh) and Argo CD's
## one binary built from its Go module into the cache, once per version
## (internal/tooling/argocd), for test/gitops.
argocd:
	bash cluster/local/redis.sh >/dev/null
	$(GO) run ./internal/tooling/argocd/argocdbuild

## test-gitops: Argo CD syncs the gitops/ tree from a Git repository served
## on loopback (test/gitops); not part of make test, whose time it would
## exceed. CI runs it after make test.
test-gitops: argocd
	$(GO) test $(TEST_FLAGS) -v ./test/gitops

## test-race: the packages whose concurrency matters most, under the race detector.
RACE_PKGS := ./internal/emulator/... ./internal/clients/...
test-race:
	$(GO) test $(TEST_FLAGS) -race $(RACE_PKGS)

reviewable: generate lint test-unit test-race

## demo: on the real node (Linux, root), Crossplane from its chart installs
## the packages; one PodPublicAddress gives a game server StatefulSet's Pods
## public addresses (README). `go run ./cluster/local/demo --process` is the
## process-only demo for machines without root.
demo:
	$(GO) run ./cluster/local/demo

## demo-gitops: the demo with Argo CD (`--gitops`): on the real node Argo CD
## syncs gitops/, packages included, and the demo prints the Application's
## tree (kind, name, sync, health, message) from its status (docs/argocd.md).
demo-gitops: argocd
	$(GO) run ./cluster/local/demo --gitops

## bench: docs/performance.md and bench/results.json, written by cmd/bench:
## the provider binary as its own process with its default flags, 1000 Pods
## per mode against the emulator's realistic profile beside a no-provider
## baseline, LeastUsed again with a 2 s --target-batch-max-wait (what the
## flag trades: CLB calls against bind latency), a 4-minute steady window,
## memory at 10k PodAddresses + 1k other managed resources, and the peer.
## About 18 minutes on a 2-core machine; each phase is bounded by -timeout
## (the peer's defaults reach it) and the memory run by -memory-timeout.
bench:
	$(GO) run ./cmd/bench -pods 1000 -steady 4m -timeout 4m -mode 'max-wait-2s=--target-batch-max-wait=2s' -memory-pods 10000 -memory-others 1000 -memory-timeout 6m

## bench-scale: the provider alone at 5000 Pods (100 load balancers),
## written beside make bench's results: bench/results-5000.json and
## docs/performance-5000.md. About 15 minutes on a 2-core machine.
bench-scale:
	$(GO) run ./cmd/bench -systems provider -pods 5000 -steady 0 -timeout 8m -out bench/results-5000.json -docs docs/performance-5000.md -plots docs/performance-5000

## bench-smoke: a short run of the same harness; it writes its results
## under _output/ and leaves the docs alone.
bench-smoke:
	$(GO) run ./cmd/bench -pods 100 -steady 30s -out $(OUTPUT)/bench/results.json -docs $(OUTPUT)/bench/performance.md -plots $(OUTPUT)/bench/performance

## bench-micro: the micro-benchmarks other docs quote — the allocator at
## 100k ports 90 % full, signed requests/second of the emulator, the IP
## pools' allocator HTTP API — the in-process 1000-Pod benchmark (no
## client rate limit; for profiling, not the figures users get), and a
## 500-endpoint Service rolling over behind a TargetSet (CLB calls per
## endpoint change).
bench-micro:
	$(GO) test ./internal/portalloc/ -run '^$$' -bench . -benchmem
	$(GO) test ./internal/emulator/ -run '^$$' -bench DescribeListenersSigned -benchtime 3s
	$(GO) test ./test/podaddress/ -run '^$$' -bench '1000Pods' -benchtime 1x -timeout 30m
	$(GO) test ./test/ippool/ -run '^$$' -bench AllocatorHTTP -benchtime 1x -timeout 10m
	$(GO) test ./test/integration/ -run '^$$' -bench ServiceRollover -benchtime 1x -timeout 10m

## soak: the long variant of test/reliability (docs/reliability.md): 20
## cycles of 500 Pods with the provider SIGKILLed at random moments, and 100
## kills right after CreateLoadBalancer per kind. CI runs 2 × 100 and 10.
soak:
	$(GO) test ./test/reliability/ -count=1 -timeout 120m -v -run . \
		-args -reliability.cycles=20 -reliability.pods=500 -reliability.trials=100

## xpkg: the provider, function and configuration packages and the NAT
## agent's image in $(OUTPUT)/, built with no Docker daemon (cluster/xpkg,
## cluster/images): one file per architecture of ARCHS for the provider, the
## function and the agent; VERSION=v1.2.3 names and labels them.
xpkg:
	$(GO) run ./cluster/xpkg -package-root package -runtime ./cmd/provider -examples examples \
		-version $(VERSION) -arch "$(ARCH_LIST)" -o $(OUTPUT)
	$(GO) run ./cluster/xpkg -package-root package/function -runtime ./cmd/function \
		-version $(VERSION) -arch "$(ARCH_LIST)" -o $(OUTPUT)
	$(GO) run ./cluster/xpkg -package-root package/configuration -version $(VERSION) -o $(OUTPUT)
	$(GO) run ./cluster/images -version $(VERSION) -arch "$(ARCH_LIST)" -o $(OUTPUT) tencentcloud-network-agent

## publish: make xpkg, then push the three packages and the agent's image to
## $(REGISTRY)/<name>:$(VERSION), the files of several architectures as one
## image index (cluster/publish). Plain HTTP only to localhost or loopback.
publish: xpkg
	@test -n "$(REGISTRY)" || { echo "make publish needs REGISTRY=host/path"; exit 2; }
	$(GO) run ./cluster/publish -registry $(REGISTRY) -version $(VERSION) -dir $(OUTPUT) \
		provider-tencentcloud-network function-tencentcloud-network configuration-tencentcloud-network tencentcloud-network-agent

## node: the local control plane with a real node (containerd, kubelet,
## controller manager, scheduler, kube-proxy) until interrupted; Linux and
## root (kubeconfig.local).
node:
	$(GO) run ./cluster/local/node --kubeconfig kubeconfig.local

## controlplane: run the local control plane until interrupted (kubeconfig.local).
controlplane:
	$(GO) run ./cluster/local/controlplane --kubeconfig kubeconfig.local

clean:
	rm -f kubeconfig.local
	rm -rf $(OUTPUT)
