#!/usr/bin/env bash
# Runs every test of the given packages (default ./...) through gotestsum in
# three phases, one after the other: the node-level e2e package alone; all
# other packages (in parallel); and, when the e2e package is among them, its
# cgroup v2 scenarios (TestV2) in a qemu guest on a real v2 kernel (see
# test/v2guest; make test-v2 runs that phase alone). The e2e scenarios set node-wide memory thresholds
# from the node's usage a moment earlier and time koordlet's reactions:
# another package's test binaries building or allocating beside them moved
# node memory by hundreds of MiB and made them flaky. Ends with the counts
# of tests run, passed, failed and skipped over all phases, and of the v2
# phase on its own.
set -uo pipefail
GO=${GO:-go}
GOTESTSUM=${GOTESTSUM:-"$GO run gotest.tools/gotestsum@v1.13.0"}
counts=$(mktemp)

mapfile -t pkgs < <($GO list "${@:-./...}")
unit=() e2e=()
for p in "${pkgs[@]}"; do
	case "$p" in
	*/test/e2e) e2e+=("$p") ;;
	*) unit+=("$p") ;;
	esac
done

rc=0
# phase OUT TIMEOUT ARGS...: one gotestsum run; its counts go to OUT.
phase() {
	local out=$1 timeout=$2
	shift 2
	[ $# -gt 0 ] || return 0
	local start=$(date +%s)
	$GOTESTSUM --format testname --jsonfile "$jsondir/$(date +%s%N).json" \
		--post-run-command "sh -c 'echo \$TESTS_TOTAL \$TESTS_FAILED \$TESTS_SKIPPED >>$out'" \
		-- -count=1 -timeout "$timeout" "$@" || rc=1
	echo "phase time: $(($(date +%s) - start)) s"
}
v2counts=$(mktemp)
jsondir=$(mktemp -d)
trap 'rm -rf "$counts" "$v2counts" "$jsondir"' EXIT

# why: each failed test's assertion lines (testify's Error and Messages,
# t.Error's file:line), a few per test: the failures' own words, which the
# tail of a long run's output (koordlet's logs) otherwise buries.
why() {
	cat "$jsondir"/*.json 2>/dev/null | jq -r 'select(.Test != null) | [.Action, .Test, (.Output // "")] | @tsv' 2>/dev/null |
		awk -F'\t' '
			$1 == "output" { out[$2] = out[$2] "\n" $3 }
			$1 == "fail" { failed[$2] = 1 }
			END {
				for (t in failed) {
					leaf = 1
					for (u in failed) if (index(u, t "/") == 1) leaf = 0
					if (!leaf) continue
					n = split(out[t], lines, "\n"); k = 0
					printf "--- %s\n", t
					for (i = 1; i <= n && k < 12; i++)
						if (lines[i] ~ /(Error Trace|Error|Messages):|_test\.go:[0-9]+: [^ ]|panic:|timed out/ && lines[i] !~ /log tail/) {
							gsub(/\\t/, " ", lines[i]); gsub(/\\n$/, "", lines[i]); print "    " lines[i]; k++
						}
				}
			}'
}
# The node-level phase first, alone (see above); it also leaves the
# real-YARN peer's class-data archives (test/yarnpeer/cds.go) that the
# guest's JVMs map. Then the other packages, then the v2 guest, alone too:
# run beside the unit packages, the lint and the fuzzing (2026-11-28, to
# save their ten minutes), the guest's emulated CPUs were starved on this
# 2-core machine — a box took 4.5 minutes to come up, koordlet missed its
# /metrics deadline and its scenarios' windows — and two CI runs in a row
# failed in it.
if [ "${V2_ONLY:-}" != 1 ]; then
	# TestV2 needs a cgroup v2 kernel: it runs in the guest phase. The
	# node-level phase takes ~23 minutes (TestRealYARN ~13, of which the
	# engines' rows ~7; the engines' undisturbed runs are make
	# measure-job-baselines).
	[ ${#e2e[@]} -gt 0 ] && phase "$counts" 50m -skip '^(TestV2|TestV1Guest|TestKubelet)$' "${e2e[@]}"
fi
# guest_phase: TestV2 in the guest, then TestV1Guest in the v1 one; their
# counts go to $v2counts.
guest_phase() {
	local start=$(date +%s)
	# ~30 minutes: the emulated NMs' scenarios ~7 (the boxes share one
	# control plane: a box of its own was a minute of kube-apiserver and
	# CRDs here), the real NMs' JVMs under the guest's emulated CPU ~23.
	# The guest gets the timeout less 5 minutes.
	KOORDLET_YARN_E2E_GUEST=v2 phase "$v2counts" 45m -run '^TestV2$' "${e2e[@]}"
	# ~2 minutes: the scenarios that need a cgroup v1 node of their own
	# (global memory pressure), in the guest booted with cgroup v1.
	KOORDLET_YARN_E2E_GUEST=v1 phase "$v2counts" 15m -run '^TestV1Guest$' "${e2e[@]}"
	# koordlet-yarn's DaemonSet under a real kubelet and containerd, in a
	# guest of its own (make test-kubelet).
	KOORDLET_YARN_E2E_GUEST=kubelet phase "$v2counts" 30m -run '^TestKubelet$' "${e2e[@]}"
	awk -v s=$(($(date +%s) - start)) '{t+=$1; f+=$2; k+=$3} END {printf "v2 tests (guests on real cgroup v2 and v1 kernels): %d ran, %d passed, %d failed, %d skipped in %d s\n", t, t-f-k, f, k, s}' "$v2counts"
}
if [ "${V2_ONLY:-}" = 1 ]; then
	[ ${#e2e[@]} -gt 0 ] && guest_phase
else
	# BESIDE_GUEST: a command run first in this step (make test: the lint
	# and the fuzzing); its failure fails the run.
	if [ -n "${BESIDE_GUEST:-}" ]; then
		start=$(date +%s)
		sh -c "$BESIDE_GUEST" || rc=1
		echo "before the guest ($BESIDE_GUEST): $(($(date +%s) - start)) s"
	fi
	phase "$counts" 30m "${unit[@]}"
	[ ${#e2e[@]} -gt 0 ] && guest_phase
fi
[ ${#e2e[@]} -gt 0 ] && cat "$v2counts" >>"$counts"

if [ $rc -ne 0 ]; then
	echo "why the failed tests failed (their assertions; the whole output is above):"
	why
fi
awk '{t+=$1; f+=$2; s+=$3} END {printf "tests: %d ran, %d passed, %d failed, %d skipped\n", t, t-f-s, f, s}' "$counts"
exit $rc
