# kcp-carry: `make` is the main job, `make test` the whole suite (what CI runs).
GO ?= go
# The carry CLI only needs golang.org/x/mod and friends, never the patched
# fork, so it is built without the workspace: go.work points into .overlay/,
# which the CLI itself creates.
CARRY := bin/carry
# -count=1: the suite runs live servers, whose outcome Go's test cache cannot
# see; a cached pass would prove nothing about this machine or this build.
GO_TEST_FLAGS ?= -timeout 60m -count=1

# Every long step runs as a phase (hack/phase): a timestamped line at its
# start and end, its time in .build/phases.tsv, and `make test` ends with the
# table of them (docs/ci.md quotes a cold run's).
PHASE := hack/phase
export PHASE_LOG := $(CURDIR)/.build/phases.tsv

# -trimpath for every go command of the suite: the overlay lies in each
# clone's .overlay/ and CI extracts kcp to a new temporary directory each run,
# and without it a package's directory is part of its build cache key, so a
# second clone or extraction would compile everything again. It keeps what
# `go env GOFLAGS` says (an environment GOFLAGS replaces the go env file's).
# -ldflags=-w: no DWARF in the test binaries the suite links (about fifty,
# most with the fork in them): a faster link; builds that set -ldflags (kcp's
# carried servers) keep theirs.
TEST_GOFLAGS := $(strip $(shell $(GO) env GOFLAGS) -trimpath -ldflags=-w)
TEST_TARGETS := test test-quick test-race test-real-kcp test-sharded kcp-e2e test-kcp-main test-detector profile-detector test-k8s-integration test-watch-cache-off test-series
$(TEST_TARGETS): export GOFLAGS := $(TEST_GOFLAGS)
# cgo off, as kcp's own builds (CGO_ENABLED=0): go.mod requires the versions
# kcp v0.32.3 requires of every module both compile (TestSharedModulesMatchKCP),
# so the suite, the test shards and kcp's e2e test binaries find the fork
# and its dependencies compiled by `carry build`. The -race builds turn cgo
# on for themselves.
$(TEST_TARGETS): export CGO_ENABLED := 0

.PHONY: test-series test-detector profile-detector test-k8s-integration test-watch-cache-off test-real-kcp phases-reset all carry overlay build kcp kcp-race test-race test-upstream kcp-main kcp-e2e sharded image verify test test-quick test-kcp-main test-sharded pins bench evidence soak clean

all: build kcp

# bin/kubectl-carry is the same binary under kubectl's plugin name: with bin/
# on PATH, `kubectl carry scrub ...` runs `kubectl-carry scrub ...`.
carry:
	$(PHASE) "tool: bin/carry" env GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -o $(CARRY) ./cmd/carry
	cp -f $(CARRY) bin/kubectl-carry

# Verify the fork zips against go.sum, apply staging-patches/, point go.work at .overlay/.
overlay: carry
	$(PHASE) "tool: overlay" $(CARRY) overlay

# Everything in this repository, linked against the patched fork.
build: overlay
	$(GO) build ./...
	$(GO) build -o bin/ ./cmd/...

# kcp's servers linked against the overlay. With KCP_SOURCE=<kcp tree> (a
# checkout or the shared archive, extracted): bin/kcp (patched) and
# bin/kcp-pristine (the positive control), cmd/kcp only, which is all the
# real-kcp suite runs. Without it: the release go.mod requires, from the
# module proxy; exit status 3 means "not on this machine" (the message says
# which module is missing and how to supply it), and `make` goes on without
# bin/kcp.
KCP_SOURCE ?=
export KCP_SOURCE
ifneq ($(KCP_SOURCE),)
kcp: overlay
	@test -d "$(KCP_SOURCE)" || { echo "make: KCP_SOURCE=$(KCP_SOURCE) is not a directory" >&2; exit 1; }
	$(PHASE) "build: kcp $(notdir $(KCP_SOURCE)), carried" $(CARRY) build --kcp-source "$(KCP_SOURCE)" --cmd cmd/kcp
	$(PHASE) "build: kcp $(notdir $(KCP_SOURCE)), stock" $(CARRY) build --kcp-source "$(KCP_SOURCE)" --cmd cmd/kcp --pristine
else
kcp: overlay
	$(CARRY) build || { rc=$$?; [ $$rc -eq 3 ] && echo "make: skipping bin/kcp (see above)"; [ $$rc -eq 3 ]; }
endif

# kcp's servers built with the race detector (-race, cgo on; a C compiler):
# bin/race/kcp (carried) and bin/race/kcp-pristine (stock), their gitVersion
# ending in -race. RACE_CMDS adds servers (test-sharded RACE=1 builds all four).
RACE_BIN := bin/race
RACE_CMDS ?= --cmd cmd/kcp
kcp-race: overlay
	@test -d "$(KCP_SOURCE)" || { echo "make kcp-race: set KCP_SOURCE=<kcp source tree> (a directory)" >&2; exit 1; }
	$(CARRY) build --race --kcp-source "$(KCP_SOURCE)" $(RACE_CMDS) --out $(RACE_BIN)
	$(CARRY) build --race --kcp-source "$(KCP_SOURCE)" $(RACE_CMDS) --out $(RACE_BIN) --pristine

# The race phase (docs/races.md): the carried race build under the seed load
# and kcp's own e2e subset with the regression test (no report on the
# handlers or the watch cache, none not already known), the stock one under
# a burst of wildcard partial-metadata LISTs (a report naming
# setKCPOriginalAPIVersionAnnotation). Reports in .build/race/<test>/. And
# TestRealKCPRaceUnitFixes: the unit tests of kcp-patches/2-informer-restmapper-race and 3-clustercachedresource-selector-race
# with -race in KCP_SOURCE and KCP_MAIN_SOURCE, passing with the patch and
# failing without it. TestRealKCPRaceTarget: kcp's own race target
# (kcp-patches/4-race-e2e-target) by hack/kcp-race-target.sh, failing at the
# fork pin with a report naming setKCPOriginalAPIVersionAnnotation and
# passing with the carry (a go test of its own: two of kcp's builds, cold,
# take half of -timeout). Then the shard tests on the -race shard, `carry
# verify`'s test and the upstream patch's (upstream-patches/kubernetes on
# upstream's k8s.io/apiserver) under -race, whose forms without it `make
# test` runs. Not in `make test`: it would take CI past its limit (docs/ci.md).
test-race: kcp-race
	$(GO) test $(GO_TEST_FLAGS) -v -run '^TestRealKCPRace' -skip '^TestRealKCPRaceTarget$$' ./test/e2e/
	$(GO) test $(GO_TEST_FLAGS) -v -run '^TestRealKCPRaceTarget$$' ./test/e2e/
	KCP_CARRY_SHARD_RACE=1 $(GO) test $(GO_TEST_FLAGS) -run '$(RACE_SHARD_TESTS)' ./test/e2e/ ./test/detector/
	$(GO) test $(GO_TEST_FLAGS) -run '^TestCarryFailsWithoutAndPassesWith$$' ./pkg/carry/verify/
	$(GO) test $(GO_TEST_FLAGS) -run '^TestUpstreamTestsPassWithAndFailWithout$$' ./pkg/carry/upstreampatches/

# The Kubernetes pull requests' tests (upstream-patches/kubernetes) on
# upstream's client-go and k8s.io/apiserver v0.37.2 in one workspace, under
# -race as Kubernetes' unit jobs run them (KUBE_RACE=-race): they pass with
# the series and fail without it. `make test` only applies the series
# (TestSeriesAppliesUpstream): the workspace builds the apiserver's cacher
# tests against the patched client-go, which nothing else shares (about 9 min
# cold without -race, docs/ci.md).
test-upstream:
	$(GO) test $(GO_TEST_FLAGS) -v -run '^TestUpstreamTestsPassWithAndFailWithout$$' ./pkg/carry/upstreampatches/

# The live tests on the patched test shard: under -race here, without it in
# `make test`, where the -race build of the fork would be the one compile the
# suite shares with nothing (docs/ci.md).
RACE_SHARD_TESTS := ^(TestPatchedShardSurvivesLoad|TestPatchedSequentialProbeClean|TestScrubShardAfterUpgrade|TestPatchedShardMixedWatchers|TestPatchedMatrixIsClean)$$

# kcp's sharded servers from KCP_SOURCE, with the carry (bin/kcp,
# bin/kcp-front-proxy, bin/cache-server, bin/virtual-workspaces) and stock
# (the same with -pristine): what `make test-sharded` runs.
SHARDED_EXTRA_CMDS := --cmd cmd/kcp-front-proxy --cmd cmd/cache-server --cmd cmd/virtual-workspaces
SHARDED_CMDS := --cmd cmd/kcp $(SHARDED_EXTRA_CMDS)
sharded: overlay
	@test -n "$(KCP_SOURCE)" || { echo "make sharded: set KCP_SOURCE=<kcp source tree> (e.g. ../shared/kcp/kcp-v0.32.3.tar.gz, extracted)" >&2; exit 1; }
	@test -d "$(KCP_SOURCE)" || { echo "make: KCP_SOURCE=$(KCP_SOURCE) is not a directory" >&2; exit 1; }
	$(PHASE) "build: sharded servers, carried" $(CARRY) build --kcp-source "$(KCP_SOURCE)" $(SHARDED_CMDS)
	$(PHASE) "build: sharded servers, stock" $(CARRY) build --kcp-source "$(KCP_SOURCE)" $(SHARDED_CMDS) --pristine

# The carry in kcp's sharded topology (test/sharded): two shards, the cache
# server, a virtual-workspaces server per shard and the front-proxy, carried
# and stock. SHARDED_REDUCED=1 is the reduced form: the carried topology
# only, with a 10 s load, for a quick run.
# RACE=1 runs the carried topology's race builds instead (bin/race/: both
# shards, the cache server, the virtual workspaces and the front-proxy built
# with -race): no race report on the handlers or the watch cache.
SHARDED_REDUCED ?=
RACE ?=
ifeq ($(RACE),1)
test-sharded: overlay
	@test -d "$(KCP_SOURCE)" || { echo "make test-sharded RACE=1: set KCP_SOURCE=<kcp source tree> (a directory)" >&2; exit 1; }
	$(CARRY) build --race --kcp-source "$(KCP_SOURCE)" $(SHARDED_CMDS) --out $(RACE_BIN)
	KCP_CARRY_SHARDED_RACE=1 KCP_CARRY_SHARDED_REDUCED=$(SHARDED_REDUCED) $(GO) test $(GO_TEST_FLAGS) -v -run '^TestShardedKCPRace' ./test/sharded/
else
test-sharded: sharded
	KCP_CARRY_SHARDED_REDUCED=$(SHARDED_REDUCED) $(GO) test $(GO_TEST_FLAGS) -v -run '^TestSharded' ./test/sharded/
endif

# kcp main (or any other kcp tree): KCP_MAIN_SOURCE=<tree> builds
# bin/kcp-main/kcp and bin/kcp-main/kcp-pristine from it, stamped with the
# tree's commit (or KCP_MAIN_VERSION). `carry pins --kcp-source` first: a
# tree that pins another fork commit than the carry's is refused.
KCP_MAIN_SOURCE ?=
KCP_MAIN_VERSION ?=
KCP_MAIN_BIN := bin/kcp-main
export KCP_MAIN_SOURCE
kcp-main: overlay
	@test -d "$(KCP_MAIN_SOURCE)" || { echo "make: KCP_MAIN_SOURCE=$(KCP_MAIN_SOURCE) is not a directory (a kcp main tree)" >&2; exit 1; }
	$(CARRY) pins --kcp-source "$(KCP_MAIN_SOURCE)"
	$(CARRY) build --kcp-source "$(KCP_MAIN_SOURCE)" --cmd cmd/kcp --out $(KCP_MAIN_BIN) $(if $(KCP_MAIN_VERSION),--kcp-version $(KCP_MAIN_VERSION))
	$(CARRY) build --kcp-source "$(KCP_MAIN_SOURCE)" --cmd cmd/kcp --out $(KCP_MAIN_BIN) --pristine $(if $(KCP_MAIN_VERSION),--kcp-version $(KCP_MAIN_VERSION))

# kcp's own e2e subset alone (TestRealKCPOwnE2E): conformance on partial
# metadata and cross-cluster LISTs, garbagecollector and quota, compiled from
# KCP_SOURCE with kcp-patches/ applied, against bin/kcp and bin/kcp-pristine;
# kcp-patches' regression test must fail on the stock kcp and pass on the
# carried one. Logs in .build/kcp-e2e/<tree>/.
kcp-e2e: overlay kcp
	$(GO) test $(GO_TEST_FLAGS) -run '^TestRealKCPOwnE2E$$' ./test/e2e/

# The whole real-kcp suite and kcp's e2e subset on kcp main's builds
# (KCP_MAIN_SOURCE), and TestRealKCPE2EVet: `go vet ./test/e2e/...` in a
# copy of main with every kcp-patches/ pull request applied, which compiles
# most of kcp and is not in `make test`; `make test` only checks main's fork
# pin. The race phase is kcp v0.32.3's (make test-race).
KCP_MAIN_ENV = KCP_BIN_DIR=$(CURDIR)/$(KCP_MAIN_BIN) KCP_SOURCE="$(KCP_MAIN_SOURCE)"
test-kcp-main: kcp-main
	$(KCP_MAIN_ENV) $(GO) test $(GO_TEST_FLAGS) -run '^TestRealKCP' -skip '^TestRealKCPRace|^TestRealKCPWatchCacheDetector$$|^TestRealKCPDetectorProfile$$|^TestRealKCPWatchCacheOff(Proof|Cost)$$|^TestRealKCPSeries$$' ./test/e2e/

# kcp as it is after the series merges (TestRealKCPSeries, issue 50; the
# table of one run in docs/upstream.md): a copy of KCP_MAIN_SOURCE (and of
# KCP_SOURCE, the release-0.32 forms, when it is set) with every pull
# request of kcp-patches/ applied in merge order, built with the carry
# through the overlay, and stock kcp from the unpatched tree. On the series'
# kcp, both detector switches on: kcp's e2e subset and every e2e test the
# series adds pass, TestRealKCPIdentityWildcardPartialMetadata's check, and
# the seed load for SERIES_LOAD (default 10m): alive, 0 errors, nothing
# stored. On stock kcp every fix's test fails. Record and logs in
# .build/series/<tree>/ (series.json). Not in `make test`: two kcp builds
# and the load.
SERIES_LOAD ?= 10m
test-series: overlay
	@test -d "$(KCP_MAIN_SOURCE)" || { echo "make test-series: set KCP_MAIN_SOURCE=<kcp main tree> (a directory; KCP_SOURCE=<kcp v0.32.3 tree> adds the release-0.32 form)" >&2; exit 1; }
	@mkdir -p .build
	@# Every pull request's presubmit, kcp's e2e checks included, one table (.build/presubmit-table.txt); then kcp
	@# after the series under its e2e tests and the load. Both run; either failing fails the target.
	$(CARRY) presubmit --e2e --kcp-source "$(KCP_MAIN_SOURCE)" $(if $(KCP_SOURCE),--kcp-release-source "$(KCP_SOURCE)") >.build/presubmit-table.txt; \
	presubmit=$$?; cat .build/presubmit-table.txt; \
	KCP_CARRY_SERIES_LOAD=$(SERIES_LOAD) $(GO) test -timeout 240m -count=1 -v -run '^TestRealKCPSeries$$' ./test/e2e/; \
	series=$$?; [ $$presubmit -eq 0 ] && [ $$series -eq 0 ]

# The fork's watch cache mutation detector on real kcp (docs/detector.md):
# on KCP_SOURCE and KCP_MAIN_SOURCE, kcp built two ways (carry build
# --without: the pristine fork with the detector's pull request only, the
# whole carry), kcp's own e2e subset unmodified with
# KUBE_WATCHCACHE_MUTATION_DETECTOR and KUBE_CACHE_MUTATION_DETECTOR on, the
# list test with the informers' switch alone, an idle kcp with workspaces
# (KCP_CARRY_DETECTOR_IDLE, default 10m), and the cost: both switches, the
# informers' alone, and off. About 40 min per tree here; records in
# .build/detector/<tree>/. Not in `make test`, which runs its carried kcp
# with both switches on instead.
test-detector: overlay
	@test -n "$(KCP_SOURCE)$(KCP_MAIN_SOURCE)" || { echo "make test-detector: set KCP_SOURCE and/or KCP_MAIN_SOURCE to kcp trees" >&2; exit 1; }
	$(GO) test -timeout 180m -count=1 -v -run '^TestRealKCPWatchCacheDetector$$' ./test/e2e/

# Where kcp's CPU and memory go under kcp's e2e subset (docs/detector.md):
# kcp from KCP_MAIN_SOURCE (else KCP_SOURCE) profiled through its
# /debug/pprof with the detectors off, the informers' switch on client-go's
# detector as released, the informers' switch and both on the carry's. About
# 30 min here; profiles and profile.json in .build/detector-profile/<tree>/.
profile-detector: overlay
	@test -n "$(KCP_SOURCE)$(KCP_MAIN_SOURCE)" || { echo "make profile-detector: set KCP_MAIN_SOURCE or KCP_SOURCE to a kcp tree" >&2; exit 1; }
	$(GO) test -timeout 120m -count=1 -v -run '^TestRealKCPDetectorProfile$$' ./test/e2e/

# Kubernetes' own integration tests (k8s.io/kubernetes at the release of
# upstream-patches/kubernetes/base) with KUBE_CACHE_MUTATION_DETECTOR=true, as
# its hack/make-rules/test-integration.sh sets it: client-go as released, the
# cheap client-go, and that with the watch cache's switch too; etcd built from
# go.etcd.io/etcd/server/v3. KCP_CARRY_K8S_INTEGRATION_PACKAGES (directories
# under test/integration) and KCP_CARRY_K8S_INTEGRATION_ROUNDS (default 2)
# choose the runs. About 70 min here cold; records in .build/k8s-integration/.
test-k8s-integration:
	KCP_CARRY_K8S_INTEGRATION=1 $(GO) test -timeout 240m -count=1 -v -run '^TestKubernetesIntegrationDetector$$' ./test/kubernetes/

# The operators' mitigation, stock kcp with --watch-cache=false
# (docs/watch-cache-off.md): on KCP_SOURCE's builds (KCP_BIN_DIR for
# another tree's, e.g. bin/kcp-main), the seed load for 10 minutes
# (KCP_CARRY_WATCH_CACHE_OFF_SOAK) with kcp's RSS sampled, the mixed
# watchers, the scrub scenario, kcp's e2e subset, the sharded topology with
# every shard so started (KCP_SOURCE's servers only), and the cost against
# the carried kcp at 1,000 and 10,000 ClusterRoles
# (KCP_CARRY_WATCH_CACHE_OFF_SIZES). About 50 min here; records in
# .build/watch-cache-off/<tree>/. `make test` runs TestRealKCPWatchCacheOff
# (the load and its control) only.
test-watch-cache-off: $(if $(KCP_BIN_DIR),overlay,sharded)
	@test -d "$(KCP_SOURCE)" || { echo "make test-watch-cache-off: set KCP_SOURCE=<kcp source tree> (a directory)" >&2; exit 1; }
	$(GO) test -timeout 180m -count=1 -v -run '^TestRealKCPWatchCacheOff' ./test/e2e/
	$(if $(KCP_BIN_DIR),,$(GO) test $(GO_TEST_FLAGS) -v -run '^TestShardedWatchCacheOff$$' ./test/sharded/)

# kcp's release image with the carry's binaries (cross-compiled per platform,
# no Docker daemon). BASE (default ghcr.io/kcp-dev/kcp:<kcp version>, or
# oci:DIR), PLATFORMS (e.g. linux/amd64,linux/arm64; default all of the
# base's), PUSH (a registry reference) and/or OUT (an OCI image layout; default
# bin/kcp-image when PUSH is empty), KCP_SOURCE (a kcp checkout, as carry build).
BASE ?=
PLATFORMS ?=
PUSH ?=
OUT ?= $(if $(PUSH),,bin/kcp-image)
image: overlay
	$(CARRY) image $(if $(BASE),--base $(BASE)) $(if $(PLATFORMS),--platform $(PLATFORMS)) \
		$(if $(PUSH),--push $(PUSH)) $(if $(OUT),--out $(OUT)) $(if $(KCP_SOURCE),--kcp-source $(KCP_SOURCE))

# The carry's own tests: fail on the pristine fork, pass with the carry.
verify: overlay
	$(CARRY) verify

# Check go.mod's pin block against kcp's go.mod.
pins: carry
	$(CARRY) pins

# Cost of the carry on the list and watch paths, typed and custom resources:
# pristine vs patched, interleaved, compared with benchstat (about 10 minutes).
bench: overlay
	hack/bench.sh

# The evidence report (a few minutes): the same hammer load against the
# pristine and the patched test shard, one at a time, into evidence/
# (duel.json, lists-per-second.svg, README.md quoting evidence/benchstat.txt).
# EVIDENCE_FLAGS passes flags, e.g. EVIDENCE_FLAGS='--note "Shared machine."'.
# With KCP_SOURCE, it adds the real-kcp section: the duel on bin/kcp-pristine
# and bin/kcp, and one client's LIST ratio in alternating rounds
# (bin/evidence --help: --kcp-objects, --kcp-workspaces, --kcp-annotations),
# and the sharded section (make sharded's servers: stock time to death and
# carried LISTs/s per shard, the front-proxy's answers; --sharded-only
# measures it alone).
EVIDENCE_FLAGS ?=
EVIDENCE_KCP_FLAGS = $(if $(KCP_SOURCE),--kcp-patched bin/kcp --kcp-pristine bin/kcp-pristine --sharded-bin bin)
evidence: overlay $(if $(KCP_SOURCE),sharded)
	$(GO) build -o bin/evidence ./cmd/evidence
	bin/evidence $(EVIDENCE_KCP_FLAGS) $(EVIDENCE_FLAGS)

# kcps side by side under the seed load (8 wildcard partial-metadata listers,
# 4 writers, 50 ClusterRoles per logical cluster) for SOAK_DURATION (not in
# CI; docs/soak.md): every 30 s each kcp's RSS, Go heap, goroutines, etcd's
# database size and revision, the watch caches' capacity; heap profiles at
# 2 and 10 minutes and the end, diffed; soak.json and SVG charts in
# SOAK_OUT. SOAK_KCPS are NAME=BINARY; SOAK_FLAGS adds --kcp-arg and
# --lister-shapes per kcp, e.g. the carry against stock kcp without a watch
# cache:
#   make soak SOAK_KCPS='carried=bin/kcp stock=bin/kcp-pristine' SOAK_FLAGS='--kcp-arg stock=--watch-cache=false'
# Needs bin/kcp (KCP_SOURCE=... builds it).
SOAK_DURATION ?= 30m
SOAK_KCPS ?= carried=bin/kcp
SOAK_OUT ?= .build/soak
SOAK_FLAGS ?=
soak: overlay $(if $(KCP_SOURCE),kcp)
	$(GO) build -o bin/soak ./cmd/soak
	bin/soak $(foreach k,$(SOAK_KCPS),--kcp $(k)) --duration $(SOAK_DURATION) --out $(SOAK_OUT) $(SOAK_FLAGS)

# With KCP_SOURCE set, the real-kcp suite (test/e2e TestRealKCP*) runs
# against bin/kcp and bin/kcp-pristine and fails if either is missing, and
# the sharded suite (test/sharded) against make sharded's servers; without
# it, those tests skip with a line naming KCP_SOURCE. They run last, alone
# and with -v, so that the log shows kcp's own e2e pass counts and the
# verdicts: kcp started while other live suites load the 2 cores was seen to
# leave its workspaces Initializing. kcp's own e2e subset runs on the
# carried kcp, the regression test on both (the subset on the stock kcp only
# reports, and is `make kcp-e2e`'s).
# The race phase (make test-race, docs/races.md) is not in it: its two
# builds of kcp with -race take 17 min cold and its runs about 8 min; a cold
# run with it was 61 min in before the real-kcp phase began, on course for
# about 95 min, past CI's limit (docs/ci.md).
# With KCP_MAIN_SOURCE too, kcp main's tree is checked to pin the carry's
# fork commit (`carry pins --kcp-source`); its builds and tests are
# `make test-kcp-main` (docs/ci.md has a recorded run). In the suite,
# test/kcpscripts runs kcp's hack/bump-k8s.sh, with kcp-patches/ and stock,
# on a copy of each tree given (no network, no build).
REAL_KCP_SKIP := ^TestRealKCPRace|^TestRealKCPWatchCacheDetector$$|^TestRealKCPDetectorProfile$$|^TestRealKCPWatchCacheOff(Proof|Cost)$$|^TestRealKCPWatchCacheOff$$/^control-with-cache$$|^TestRealKCPPristine$$|^TestRealKCPPristineDiesUnderLoad$$|^TestRealKCPOwnE2E$$/^pristine$$/^kcp-suite$$|^TestRealKCPE2EVet$$|^TestRealKCPSeries$$
# `sharded` builds bin/kcp and bin/kcp-pristine with the other servers, so
# `kcp` (the same two links again) is not a prerequisite.
test: phases-reset overlay $(if $(KCP_SOURCE),sharded)
	$(PHASE) "vet" $(GO) vet ./...
	$(PHASE) "suite" env KCP_CARRY_SHARD_RACE=0 $(GO) test $(GO_TEST_FLAGS) -vet=off -skip '^TestRealKCP|^TestSharded|^TestUpstreamTestsPassWithAndFailWithout$$' ./...
	$(PHASE) "real kcp $(if $(KCP_SOURCE),$(notdir $(KCP_SOURCE))): TestRealKCP*" $(GO) test $(GO_TEST_FLAGS) -vet=off -v -run '^TestRealKCP' -skip '$(REAL_KCP_SKIP)' ./test/e2e/
ifneq ($(KCP_SOURCE),)
	$(PHASE) "sharded kcp $(notdir $(KCP_SOURCE)): TestSharded*" $(GO) test $(GO_TEST_FLAGS) -vet=off -v -run '^TestSharded' -skip '^TestShardedWatchCacheOff$$' ./test/sharded/
endif
ifneq ($(KCP_MAIN_SOURCE),)
	$(PHASE) "kcp main $(notdir $(KCP_MAIN_SOURCE)): fork pin" $(CARRY) pins --kcp-source "$(KCP_MAIN_SOURCE)"
endif
	@$(PHASE) --table

phases-reset:
	@$(PHASE) --reset

# Every real-kcp test but the race phase's on KCP_SOURCE's builds: what
# `make test` runs, and TestRealKCPPristine (one LIST, one PATCH, "" in etcd
# after a restart), whose assertions TestRealKCPScrubAfterUpgrade's stock
# half makes too (docs/ci.md), kcp's e2e subset on the stock kcp, and
# TestRealKCPE2EVet (kcp's e2e tests vetted after kcp-patches/); not the
# mitigation's long proof and cost (make test-watch-cache-off).
test-real-kcp: sharded
	$(GO) test $(GO_TEST_FLAGS) -v -run '^TestRealKCP' -skip '^TestRealKCPRace|^TestRealKCPWatchCacheDetector$$|^TestRealKCPDetectorProfile$$|^TestRealKCPWatchCacheOff(Proof|Cost)$$|^TestRealKCPSeries$$' ./test/e2e/

# The quick loop before `make test` (CONTRIBUTING.md): the suite with -short
# and no kcp source, so the live suites that start test shards, kcp or the
# sharded topology skip with a line saying so; unit tests, fakes and the
# carry command's scripts run. A few minutes warm.
test-quick: overlay
	KCP_SOURCE= KCP_MAIN_SOURCE= $(GO) test -short -count=1 -timeout 15m ./...

clean:
	rm -rf bin .build .overlay
