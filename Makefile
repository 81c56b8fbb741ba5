# koordlet-yarn: a koordlet build with the YARN plugin set installed.
GO      ?= go
BIN     ?= bin
PKGS    ?= ./...
BENCH   ?= .
# Longer runs give steadier figures: make bench BENCHTIME=5s
BENCHTIME ?= 2s

.PHONY: all deps build test e2e-tools bench lint demo measure-evict measure-isolation measure-discovery clean

# Plain make only prints the main targets: most targets install packages with
# sudo (deps, deps-v2), need root and cgroup v1, or boot a qemu guest.
.DEFAULT_GOAL := help
.PHONY: help
help:
	@echo 'koordlet-yarn: make <target> (docs/development.md). Main targets:'
	@echo '  build            bin/koordlet (installs libpfm4-dev with sudo when missing, as most targets do)'
	@echo '  lint             gofmt and go vet'
	@echo '  demo             the node in a box, narrated (root, cgroup v1; never on a Kubernetes node)'
	@echo '  test             every test: unit, real-kernel, e2e, fuzz, cgroup v2 in a qemu guest (root, cgroup v1; installs qemu with sudo)'
	@echo '  test-yarn        the e2e rows against Hadoop 3.5.0 and 3.3.6 (root, Java 17, Maven)'
	@echo '  test-v2          the cgroup v2 scenarios in the qemu guest'
	@echo '  test-kubelet     the DaemonSet under a real kubelet and containerd (cgroup v2, in a qemu guest)'
	@echo '  test-v2-engines  MapReduce and Spark on cgroup v2 in the guest (long)'
	@echo '  test-kernel-510  the real-kernel tests of the eBPF loaders on Debian bullseye (5.10) in the guest (KERNEL_SUITE=)'
	@echo '  bench            Go benchmarks (BENCH=, PKGS=, BENCHTIME=)'
	@echo '  measure-*        the measurements of docs/figures.md, e.g. measure-colocation, measure-evict'
	@echo '  soak             5,000 YARN containers with every YARN gate on (root, cgroup v1)'
	@echo '  image            the koordlet-yarn image (IMAGE=, PUSH=1)'
	@echo '  render           the koordlet DaemonSet overlay, rendered'
	@echo '  all              lint, build and test'
	@echo '  clean            remove bin/'

all: lint build test

# libpfm4 headers are needed by koordlet's cgo perf code.
deps:
	@if [ ! -f /usr/include/perfmon/pfmlib.h ]; then \
		echo "installing libpfm4-dev (koordlet's cgo perf headers)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq libpfm4-dev; \
	fi

# The version stamped into the binary (--version, koordlet_yarn_build_info):
# the git tag or commit, -dirty with uncommitted changes.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
LDFLAGS = -X github.com/koordlet-yarn/koordlet-yarn/framework/version.version=$(VERSION)

build: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/koordlet ./cmd/koordlet

# kube-apiserver and etcd for the node-level e2e tests, built once and cached
# in build/bin (a cold build takes minutes; doing it here keeps it out of the
# test binary's time budget).
e2e-tools:
	test/e2e/tools/build.sh

# The real-YARN peer (test/yarn: Hadoop's MiniYARNCluster and a small
# ApplicationMaster) built with Maven into build/yarn/<version> for Hadoop
# 3.5.0 and 3.3.6, its dependencies
# fetched from Maven Central here, never at test time.
.PHONY: deps-yarn test-yarn
deps-yarn:
	test/yarn/build.sh

# The e2e scenarios against the real ResourceManager and NodeManager alone.
test-yarn: deps deps-yarn e2e-tools
	$(GO) test -count=1 -timeout 40m -run '^TestRealYARN' -v ./test/e2e

# Each fuzz target mutates its seed corpus (testdata/fuzz/<FuzzName>, which
# plain go test also runs) for a short while; a failing input is written
# next to the seeds. One go test -fuzz per target (Go fuzzes one at a time).
# Budgets are execution counts, not durations: with a duration, Go 1.26's
# fuzz coordinator can fail a clean run with "context deadline exceeded" when
# the deadline races a busy worker (golang/go#75804, fixed in Go 1.27); a
# count has no deadline. Each count is about 10-30 s on a 2-core runner (the
# first seconds go to the seed corpus: a smoke in CI, longer runs by hand).
FUZZ_NM_EXECS ?= 20000x
FUZZ_ID_EXECS ?= 150000x
.PHONY: fuzz
fuzz: deps
	$(GO) test -run '^$$' -fuzz '^FuzzNMResponse$$' -fuzztime $(FUZZ_NM_EXECS) ./framework/store
	$(GO) test -run '^$$' -fuzz '^FuzzParseContainerID$$' -fuzztime $(FUZZ_ID_EXECS) ./framework/yarn

# Real-kernel and e2e tests run as root on cgroup v1 hosts and skip elsewhere
# (with KOORDLET_YARN_NO_SKIP=1, as in CI, such a skip fails). gotestsum runs
# go test, names every test and ends with the counts of tests run, passed,
# failed and skipped; the node-level e2e package runs first, alone, then the
# other packages, then the v2 guest (see test/run-tests.sh).
GOTESTSUM ?= $(GO) run gotest.tools/gotestsum@v1.13.0
# The lint and the fuzzing run before the other packages (BESIDE_GUEST, a
# name kept from when the guest ran beside them: it starved the guest).
# (SUBMAKE, not $(MAKE) on the recipe's line: make -n would run that line.)
SUBMAKE = $(MAKE) --no-print-directory
test: deps deps-v2 deps-yarn e2e-tools kubelet-tools
	GO="$(GO)" GOTESTSUM="$(GOTESTSUM)" BESIDE_GUEST="$(SUBMAKE) lint fuzz" test/run-tests.sh $(PKGS)

# The node-level scenarios on a real cgroup v2 kernel (TestV2): the e2e test
# binary boots a qemu guest (TCG) on Debian's kernel, which the test fetches
# into build/v2guest/kernel with apt-get download (nothing is installed on
# the host but qemu), and runs itself there (test/v2guest). `make test`
# runs this phase last, after the node-level e2e and the unit packages.
test-v2: deps deps-v2 e2e-tools
	V2_ONLY=1 GO="$(GO)" GOTESTSUM="$(GOTESTSUM)" test/run-tests.sh ./test/e2e

# The real engines' jobs against the same jobs undisturbed, on Hadoop 3.5.0
# with the LCE's cgroups (cgroup v1, this host): MapReduce's SleepJob and
# Spark's job undisturbed first, then under koordlet's eviction and the
# RM's preemption; each disturbed row logs its time and its ratio to the
# undisturbed run ("× the undisturbed"). JOB_RUNS repeats the set (a range).
JOB_RUNS ?= 2
.PHONY: measure-job-baselines
measure-job-baselines: deps deps-yarn e2e-tools build
	KOORDLET_YARN_JOB_BASELINES=1 $(GO) test -count=$(JOB_RUNS) -timeout 120m -v \
		-run '^TestRealYARN$$/^(mapreduce|spark)-' ./test/e2e

# The real node of make test-kubelet: kubelet, kube-controller-manager and
# kube-scheduler v1.35.4, containerd v2.4.2 and runc v1.4.3, built once
# into build/bin (test/kubeletnode/build.sh; a stamp skips a current build).
.PHONY: kubelet-tools test-kubelet
kubelet-tools:
	test/kubeletnode/build.sh

# koordlet-yarn's DaemonSet (deploy/koordlet, observe-only then with the
# enforcement component) under a real kubelet and containerd on cgroup v2,
# beside a NodeManager pod, in a qemu guest of its own (TestKubelet; a
# kubelet tunes the kernel and owns kubepods: never on this host).
test-kubelet: deps deps-v2 e2e-tools kubelet-tools build
	KOORDLET_YARN_E2E_GUEST=kubelet $(GO) test -count=1 -timeout 30m -run '^TestKubelet$$' -v ./test/e2e

# The real engines' jobs on cgroup v2: Hadoop's MapReduce and Spark on the
# real Hadoop 3.5.0 (its v2 handler) in make test-v2's guest, each under an
# eviction and a preemption (14-24 min a job under the guest's emulated CPU:
# not in make test; TestV2's real-yarn rows there cover every NodeManager).
.PHONY: test-v2-engines
test-v2-engines: deps deps-v2 deps-yarn e2e-tools build
	KOORDLET_YARN_E2E_GUEST=v2 KOORDLET_YARN_V2_ENGINES=1 $(GO) test -count=1 -timeout 90m -v \
		-run '^TestV2$$/^real-yarn$$/(mapreduce|spark)' ./test/e2e

# The real-kernel tests of the three eBPF loaders (collectors/lswait's LS
# CPU wait probe, hooks/yarnadopt's exec watch, collectors/cgroupwatch's
# container discovery) on the kernel of Debian's KERNEL_SUITE (bullseye:
# 5.10, the oldest kernel the docs name), in make test-v2's guest booted
# with cgroup v1 (a hybrid host, as this one: the tests' v1 cgroups, and
# cgroup2 at /sys/fs/cgroup/unified for the unified rows). The kernel is
# fetched into build/v2guest/kernel-<suite> through an apt configuration of
# its own (test/v2guest/run -kernel-suite); the test binaries are built on
# the host. About 7 minutes under TCG; not in make test or CI. Left out:
# TestRealKernelEBPFFilterKeysOnHierarchy, whose 5 s for the watcher to
# start is shorter than the eBPF source's start under TCG (it fails so on
# bookworm's 6.1 in this guest too; it runs in make test on the host).
KERNEL_SUITE ?= bullseye
KERNEL_TEST_PKGS = collectors/lswait hooks/yarnadopt collectors/cgroupwatch
KERNEL_TEST_BIN = build/kernel-$(KERNEL_SUITE)/bin
.PHONY: test-kernel-510
test-kernel-510: deps deps-v2
	@rm -rf $(KERNEL_TEST_BIN) && mkdir -p $(KERNEL_TEST_BIN)
	for p in $(KERNEL_TEST_PKGS); do $(GO) test -c -o $(KERNEL_TEST_BIN)/$$(basename $$p).test ./$$p || exit 1; done
	$(GO) run ./test/v2guest/run -kernel-suite $(KERNEL_SUITE) -cgroup-v1 -ro $(CURDIR) -dir $(CURDIR) \
		-env KOORDLET_YARN_NO_SKIP=1 -timeout 20m -- /bin/sh -c 'echo "kernel $$(uname -r)"; rc=0; \
		for p in $(KERNEL_TEST_PKGS); do echo "== $$p"; \
			(cd $$p && $(CURDIR)/$(KERNEL_TEST_BIN)/$${p##*/}.test -test.run "^TestRealKernel" -test.skip "^TestRealKernelEBPFFilterKeysOnHierarchy$$" -test.count=1 -test.v) || rc=1; \
		done; exit $$rc'

# The measurements on a real cgroup v2 kernel, in make test-v2's guest
# (qemu TCG: slower than the host), then the same in a guest of the same
# kernel booted with cgroup v1 (a hybrid host, as this one), so that v2 is
# compared with v1 on one emulated machine: creation → store for eBPF,
# inotify and polling discovery; a container's first process →
# SCHED_IDLE; the pressure episodes' crossing → eviction with the event
# trigger (v2: a watch of memory.current; v1: usage thresholds) and the
# periodic check. The tools are built on the host. About 10 minutes.
V2_MEASURE_BIN = build/v2guest/bin
V2_SCENARIO_RUNS ?= 2
V2_MEASURE_CMDS = $(V2_MEASURE_BIN)/discovery && $(V2_MEASURE_BIN)/isolation && \
	$(V2_MEASURE_BIN)/evictscenarios -runs $(V2_SCENARIO_RUNS) -episodes growing,opportunistic
.PHONY: measure-v2
measure-v2: deps deps-v2 e2e-tools build
	@mkdir -p $(V2_MEASURE_BIN)
	$(GO) build -o $(V2_MEASURE_BIN)/discovery ./test/measure/discovery
	$(GO) build -o $(V2_MEASURE_BIN)/isolation ./test/measure/isolation
	$(GO) build -o $(V2_MEASURE_BIN)/evictscenarios ./test/measure/evictscenarios
	$(GO) run ./test/v2guest/run -box -memory 8192 -dir $(CURDIR) -- /bin/sh -c '$(V2_MEASURE_CMDS)'
	$(GO) run ./test/v2guest/run -box -cgroup-v1 -memory 8192 -dir $(CURDIR) -- /bin/sh -c '$(V2_MEASURE_CMDS)'

# qemu and depmod (kmod) for make test-v2, and the package lists apt-get
# download needs. On Debian bookworm, qemu 10 from bookworm-backports:
# bookworm's qemu 7.2 livelocked the guest under multi-threaded TCG
# (test/v2guest/run.go, tcgThread), and the guest runner falls back to one
# TCG thread (slower) with a qemu older than 10.
.PHONY: deps-v2 test-v2
deps-v2:
	@if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	major=$$(qemu-system-x86_64 --version 2>/dev/null | sed -n '1s/.*version \([0-9][0-9]*\)\..*/\1/p'); \
	if [ "$${major:-0}" -lt 10 ] && grep -qs '^VERSION_CODENAME=bookworm$$' /etc/os-release; then \
		echo "installing qemu-system-x86 10 from bookworm-backports (bookworm's qemu 7.2 livelocks the cgroup v2 guest under multi-threaded TCG)"; \
		grep -qrsE '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d || \
			printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' | \
			$$SUDO tee /etc/apt/sources.list.d/koordlet-yarn-bookworm-backports.sources >/dev/null; \
		{ $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends -t bookworm-backports qemu-system-x86 kmod; } || \
			echo "qemu from bookworm-backports not installed: the guest's vCPUs run on one TCG thread (slower)"; \
	fi; \
	if ! command -v qemu-system-x86_64 >/dev/null || ! PATH="$$PATH:/usr/sbin:/sbin" command -v depmod >/dev/null; then \
		echo "installing qemu-system-x86 and kmod (the cgroup v2 guest of make test-v2; depmod indexes its kernel's modules)"; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq qemu-system-x86 kmod; \
	elif ! apt-cache depends linux-image-amd64 >/dev/null 2>&1; then \
		$$SUDO apt-get update -qq; \
	fi

bench: deps
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) $(PKGS)

lint: deps
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	$(GO) vet $(PKGS)

demo: deps
	$(GO) run ./test/demo

# Crossing → release time and released ÷ needed of the YARN-aware memory
# eviction, on the node in a box with the real koordlet (root, cgroup v1).
RUNS ?= 6
measure-evict: deps
	$(GO) run ./test/measure/evictlatency -runs $(RUNS)

# Pressure episodes (a growing executor among idle ones; an idle OPPORTUNISTIC
# beside a growing GUARANTEED; one large vs many small; a transcode-queue
# application beside a Spark one under a policy; an AM that is the only
# candidate), each with the event trigger and with the periodic check alone:
# killed vs the minimum that covers the need, lost CPU-seconds, AM kills,
# crossing → eviction and → released (root, cgroup v1). Then memory relief's
# episodes (held, fast, rm, cache) with the kill alone and with
# YARNMemoryRelief: the kills avoided, node memory's peak against the
# threshold, the band's entry → throttle, the rung that relieved each
# episode (the audit's record), the growers the RM emulator preempted.
SCENARIO_RUNS ?= 2
.PHONY: measure-evict-scenarios measure-relief-v2
measure-evict-scenarios: deps
	$(GO) run ./test/measure/evictscenarios -runs $(SCENARIO_RUNS)

# Memory relief's episodes on a real cgroup v2 kernel (make test-v2's guest,
# where the throttle is memory.high; the cache episode writes to the
# guest's scratch disk), then the same in the guest booted with cgroup v1
# (the soft limit only). About 25 minutes.
measure-relief-v2: deps deps-v2 e2e-tools build
	@mkdir -p $(V2_MEASURE_BIN)
	$(GO) build -o $(V2_MEASURE_BIN)/evictscenarios ./test/measure/evictscenarios
	$(GO) run ./test/v2guest/run -box -memory 8192 -scratch 4096 -dir $(CURDIR) -- $(V2_MEASURE_BIN)/evictscenarios -runs $(V2_SCENARIO_RUNS) -episodes none -modes event -relief held,fast,rm,cache
	$(GO) run ./test/v2guest/run -box -cgroup-v1 -memory 8192 -scratch 4096 -dir $(CURDIR) -- $(V2_MEASURE_BIN)/evictscenarios -runs $(V2_SCENARIO_RUNS) -episodes none -modes event -relief held,fast,rm,cache

# Where the CPU tail comes from beyond the budget (issue 34 part 3), on a
# real cgroup v2 kernel (make test-v2's guest; TCG: its latencies are not
# the host's, compare the runs with each other only): the co-location
# harness with LS alone, upstream's best and this plugin set, then the
# same with every memory executor's memory.high at COLOC_V2_MEMORY_HIGH MiB
# (its growth throttled; 32: under TCG an executor reaches well under 128
# MiB in its life, so 128 never binds), each window's page faults and
# memory.high events, the controller's step each time (its
# plot stays in the guest: the report gives the step's figures). LS at 30%:
# at 60% the load generator and koordlet fill the two emulated CPUs.
COLOC_V2_ARGS ?= -levels 0.3 -repeats 2 -configs 1,3,4 -warmup 10s -window 15s -step-target 100us
COLOC_V2_MEMORY_HIGH ?= 32
.PHONY: measure-colocation-v2
measure-colocation-v2: deps deps-v2 e2e-tools build
	@mkdir -p $(V2_MEASURE_BIN)
	$(GO) build -o $(V2_MEASURE_BIN)/colocation ./test/measure/colocation
	$(GO) run ./test/v2guest/run -box -memory 8192 -dir $(CURDIR) -- $(V2_MEASURE_BIN)/colocation $(COLOC_V2_ARGS) -plot /tmp/colocation-v2-step.svg
	$(GO) run ./test/v2guest/run -box -memory 8192 -dir $(CURDIR) -- $(V2_MEASURE_BIN)/colocation $(COLOC_V2_ARGS) -executor-memory-high $(COLOC_V2_MEMORY_HIGH) -plot /tmp/colocation-v2-step.svg

# LS throughput beside YARN CPU hogs with the CPU QoS applier off and on, and
# the applier's latency over 200 containers (root, cgroup v1, cpu.idle).
measure-isolation: deps
	$(GO) run ./test/measure/isolation

# Creation → store latency for eBPF, inotify and polling discovery, and the
# user-space wake-ups of 1,000 unrelated cgroup creations (root, cgroup v1).
measure-discovery: deps
	$(GO) run ./test/measure/discovery

# YARNMemoryCgroup: cpu cgroup created → all the container's processes in the
# memory cgroup koordlet made, through eBPF discovery and the store's events,
# p50/p99/max over MEMCG_CONTAINERS containers (root, cgroup v1).
MEMCG_CONTAINERS ?= 200
# YARNContainerCgroups: a container's first exec in the NodeManager pod's
# cgroup → in the cgroup koordlet made for it, p50/p99/max, and the memory
# left charged to the NM pod (root; cgroup v1 here, v2 in make measure-v2).
ADOPT_CONTAINERS ?= 200
.PHONY: measure-adopt
measure-adopt: deps
	KOORDLET_YARN_MEASURE_ADOPT=$(ADOPT_CONTAINERS) $(GO) test ./hooks/yarnadopt -run '^TestMeasureLaunchToCgroup$$' -count=1 -v

# The same on a real cgroup v2 kernel, in make test-v2's guest (qemu TCG).
.PHONY: measure-adopt-v2
measure-adopt-v2: deps deps-v2
	@mkdir -p $(V2_MEASURE_BIN)
	$(GO) test -c -o $(V2_MEASURE_BIN)/yarnadopt.test ./hooks/yarnadopt
	$(GO) run ./test/v2guest/run -box -memory 4096 -dir $(CURDIR) -- /bin/sh -c 'KOORDLET_YARN_MEASURE_ADOPT=$(ADOPT_CONTAINERS) $(V2_MEASURE_BIN)/yarnadopt.test -test.run "^TestMeasureLaunchToCgroup$$" -test.v'

.PHONY: measure-memcg
measure-memcg: deps
	KOORDLET_YARN_MEASURE_MEMCG=$(MEMCG_CONTAINERS) $(GO) test ./hooks/yarnmemcg -run '^TestMeasureCreateToMoved$$' -count=1 -v

# koordlet restart → NM fields (user, state, requests) in the store: the NM
# pod appears in koordlet's pod list after the informer's first resync; p50,
# p90 and max over NM_RUNS restarts at the production 10 s resync (fake root,
# NM stand-in; no root needed). NM_BASELINE=1 also measures the resync alone.
NM_RUNS ?= 10
.PHONY: measure-nm-at-once
measure-nm-at-once: deps
	$(GO) run ./test/measure/nmatonce -runs $(NM_RUNS) $(if $(NM_BASELINE),-baseline)

# The co-location benchmark: an LS HTTP service's latency (vegeta, open
# loop) beside YARN batch on the node in a box. By default the SLO sweep:
# LS alone, upstream koordlet's best practice for YARN at suppress
# thresholds 40–100%, and the interference controller as feedback on it
# (upstream's best at its default 65% the base, the wait signal at targets
# 70–150 µs; -control-on plugin: on this plugin set), each at every level
# of COLOC_LEVELS (shares of the node's CPU),
# COLOC_REPEATS times; the frontier at LS p99 targets 1.1–2× LS alone;
# then the controller's step response (LS 30% → 60%), plotted to
# build/colocation-step.svg (root, cgroup v1; about 25 minutes).
# COLOC_ARGS= (empty) runs the four-configuration comparison instead
# (-configs 1,2,3,4); go run ./test/measure/colocation -h lists the flags.
COLOC_LEVELS ?= 0.3,0.6
COLOC_REPEATS ?= 2
COLOC_WARMUP ?= 10s
COLOC_WINDOW ?= 15s
COLOC_ARGS ?= -sweep -step-target 100us
# The batch ledger and arbitration (YARNBatchLedger, YARNAllocatableEvict) in
# the node in a box, every change written each second: container allocated → Node
# annotation updated, patches per minute under churn, over-commit → resolved
# (root, cgroup v1; about 4 minutes).
LEDGER_CONTAINERS ?= 40
LEDGER_CHURN_RATE ?= 10
LEDGER_EPISODES ?= 5
.PHONY: measure-ledger
measure-ledger: deps
	$(GO) run ./test/measure/ledger -containers $(LEDGER_CONTAINERS) -churn-rate $(LEDGER_CHURN_RATE) -episodes $(LEDGER_EPISODES)

# Release through the ResourceManager vs a kill by koordlet, against Hadoop
# 3.5.0's own RM and NM: the node's batch memory shrinks below what the pods
# and YARN hold; how the AM hears of the released executor (PREEMPTED or a
# failed container) and how long after the shrink, RM_PREEMPT_RUNS times
# each way (root, cgroup v1, Java 17; about 1.5 minutes a run).
RM_PREEMPT_RUNS ?= 3
.PHONY: measure-rm-preemption
measure-rm-preemption: deps deps-yarn e2e-tools
	@mkdir -p build
	@$(GO) test -count=$(RM_PREEMPT_RUNS) -timeout 60m -run '^TestRealYARN$$/^over-commit-' -v ./test/e2e > build/measure-rm-preemption.log 2>&1; rc=$$?; \
		grep -E '^TestRealYARN/.*YARNRMPreemption=|^\s*--- (PASS|FAIL)|^(ok|FAIL)' build/measure-rm-preemption.log; \
		echo "whole output: build/measure-rm-preemption.log"; exit $$rc

# The batch ledger's cost across a fleet: FLEET_NODES simulated nodes (each
# with its own watch on its Node and a ledger writer driven by YARN container
# churn) against one real kube-apiserver and etcd; the ledger before the patch
# policy and the defaults now (no root; about 10 minutes at 1,000 nodes).
FLEET_NODES ?= 1000
FLEET_WARMUP ?= 150s
FLEET_DURATION ?= 90s
FLEET_CONFIGS ?= before,defaults
.PHONY: measure-fleet
measure-fleet: deps e2e-tools
	$(GO) run ./test/measure/fleet -nodes $(FLEET_NODES) -warmup $(FLEET_WARMUP) -duration $(FLEET_DURATION) -configs $(FLEET_CONFIGS)

# The kernel-side cost of the LS CPU wait probe (YARNLSCPUWait): run beside
# a koordlet with the probe loaded, e.g. during make measure-colocation;
# turns on kernel.bpf_stats_enabled for the run and puts it back (root).
LSWAIT_WINDOW ?= 30s
LSWAIT_REPEATS ?= 5
.PHONY: measure-lswait-cost
measure-lswait-cost: deps
	$(GO) run ./test/measure/lswaitcost -window $(LSWAIT_WINDOW) -repeats $(LSWAIT_REPEATS)

# The promise measured with real jobs over a compressed day (issue 33):
# Hadoop 3.5.0's RM and NM (the LCE's cgroups), koord-manager's batch
# allocatable pushed to the RM, the LS service following a day of load
# (15% → 70% of the node, its memory with it), a seeded stream of Spark
# jobs; LS alone, batch alone, upstream's best, this plugin set (kill,
# + RM preemption, + memory relief, + interference control, + SLO
# control), JOBS_REPEATS each (3: issue 49's targets are per repeat, with
# ranges); the table, the targets met / not met, an SVG timeline a day in
# build/jobs (root, cgroup v1; about 3 hours with the defaults; JOBS_ARGS
# e.g. -day 24m, -configs ls-alone,batch-alone,upstream,kill).
JOBS_REPEATS ?= 3
JOBS_ARGS ?=
.PHONY: measure-jobs
measure-jobs: deps deps-yarn e2e-tools build
	$(GO) run ./test/measure/jobs -repeats $(JOBS_REPEATS) $(JOBS_ARGS)

# The SLO day: long enough that a phase spans several declared SLO windows
# and many controller steps (-day 6m: 24 phases of 15 s, each 3 SLO windows
# of 5 s and 15 controller steps of 1 s; -day 12m doubles both and the
# time), the references and the comparison the targets need (LS alone, whose
# peak-phase p99 × 1.3 is the declared SLO; upstream's best; the SLO
# configuration, the recommended one), 3 repeats: about 12 minutes a
# configuration and repeat, 1 h 50 min in all, so that it fits a session
# beside its setup (JOBS_SLO_CONFIGS=...,batch-alone adds batch's own
# utilisation, 35 min more).
# The stream carries a backlog (JOBS_SLO_BACKLOG executors of CPU-bound
# work from the day's start to its end, Heracles' premise): without one, the
# stream's few jobs are all the batch work there is, every configuration
# runs all of it, and utilisation cannot tell a controller that lets batch
# run from one that does not.
JOBS_SLO_DAY ?= 6m
JOBS_SLO_CONFIGS ?= ls-alone,upstream,slo
JOBS_SLO_BACKLOG ?= 2
.PHONY: measure-jobs-slo
measure-jobs-slo: deps deps-yarn e2e-tools build
	$(GO) run ./test/measure/jobs -repeats $(JOBS_REPEATS) -day $(JOBS_SLO_DAY) -configs $(JOBS_SLO_CONFIGS) -backlog $(JOBS_SLO_BACKLOG) $(JOBS_ARGS)

.PHONY: measure-colocation
measure-colocation: deps
	$(GO) run ./test/measure/colocation -levels $(COLOC_LEVELS) -repeats $(COLOC_REPEATS) -warmup $(COLOC_WARMUP) -window $(COLOC_WINDOW) $(COLOC_ARGS)

# Churn soak on the node in a box with every YARN gate on: 5,000 YARN
# containers with real processes over 5 minutes, at most 100 alive;
# koordlet's fds, goroutines and heap must stay flat and its store equal
# cgroupfs (root, cgroup v1). TestSoak in make test is a 40-second version.
SOAK_CONTAINERS ?= 5000
SOAK_DURATION ?= 5m
SOAK_CONCURRENCY ?= 100
.PHONY: soak
soak: deps
	$(GO) run ./test/measure/soak -containers $(SOAK_CONTAINERS) -duration $(SOAK_DURATION) -concurrency $(SOAK_CONCURRENCY)

# The koordlet-yarn image: the stock koordlet image of the pinned Koordinator
# version with /koordlet replaced (Dockerfile), built with whichever builder
# the machine has (docker, podman, buildah, nerdctl); PUSH=1 pushes it.
IMAGE ?= koordlet-yarn:dev
.PHONY: image
image:
	IMAGE=$(IMAGE) PUSH=$(PUSH) deploy/image.sh

# The koordlet DaemonSet overlay for Koordinator's chart v1.8.0 (observe-only,
# plus the enforcement component if added), rendered with kustomize's library
# (test/kustomize); set the registry in deploy/koordlet/overlay/image.yaml
# first (the build fails without one); pipe it to kubectl apply --server-side -f -.
.PHONY: render
render:
	@cd test/kustomize && GOWORK=off $(GO) run . ../../deploy/koordlet/overlay

clean:
	rm -rf $(BIN)
