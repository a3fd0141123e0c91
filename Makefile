# kcp-carry: `make` is the main job, `make test` the whole suite (what CI runs).
GO ?= go
# The carry CLI only needs golang.org/x/mod and friends, never the patched
# fork, so it is built without the workspace: go.work points into .overlay/,
# which the CLI itself creates.
CARRY := bin/carry
GO_TEST_FLAGS ?= -timeout 40m

.PHONY: all carry overlay build kcp image verify test pins bench evidence clean

all: build kcp

carry:
	GOWORK=off $(GO) build -o $(CARRY) ./cmd/carry

# Verify the fork zips against go.sum, apply staging-patches/, point go.work at .overlay/.
overlay: carry
	$(CARRY) overlay

# Everything in this repository, linked against the patched fork.
build: overlay
	$(GO) build ./...
	$(GO) build -o bin/ ./cmd/...

# kcp's servers linked against the overlay, where kcp's module graph can be
# fetched. Exit status 3 means "not on this machine" (the message says which
# module is missing and how to supply it); `make` goes on without bin/kcp.
kcp: overlay
	$(CARRY) build || { rc=$$?; [ $$rc -eq 3 ] && echo "make: skipping bin/kcp (see above)"; [ $$rc -eq 3 ]; }

# kcp's release image with the carry's binaries (cross-compiled per platform,
# no Docker daemon). BASE (default ghcr.io/kcp-dev/kcp:<kcp version>, or
# oci:DIR), PLATFORMS (e.g. linux/amd64,linux/arm64; default all of the
# base's), PUSH (a registry reference) and/or OUT (an OCI image layout; default
# bin/kcp-image when PUSH is empty), KCP_SOURCE (a kcp checkout, as carry build).
BASE ?=
PLATFORMS ?=
PUSH ?=
OUT ?= $(if $(PUSH),,bin/kcp-image)
KCP_SOURCE ?=
image: overlay
	$(CARRY) image $(if $(BASE),--base $(BASE)) $(if $(PLATFORMS),--platform $(PLATFORMS)) \
		$(if $(PUSH),--push $(PUSH)) $(if $(OUT),--out $(OUT)) $(if $(KCP_SOURCE),--kcp-source $(KCP_SOURCE))

# The carry's own tests: fail on the pristine fork, pass with the carry.
verify: overlay
	$(CARRY) verify

# Check go.mod's pin block against kcp's go.mod.
pins: carry
	$(CARRY) pins

# Cost of the carry on the list and watch paths, and the heap it retains:
# pristine vs patched, interleaved, compared with benchstat (about 10 minutes).
bench: overlay
	hack/bench.sh

# The evidence report (a few minutes): the same hammer load against the
# pristine and the patched test shard, one at a time, into evidence/
# (duel.json, lists-per-second.svg, README.md quoting evidence/benchstat.txt).
# EVIDENCE_FLAGS passes flags, e.g. EVIDENCE_FLAGS='--note "Shared machine."'.
EVIDENCE_FLAGS ?=
evidence: overlay
	$(GO) build -o bin/evidence ./cmd/evidence
	bin/evidence $(EVIDENCE_FLAGS)

test: overlay
	$(GO) vet ./...
	$(GO) test $(GO_TEST_FLAGS) ./...

clean:
	rm -rf bin .build .overlay
