#!/usr/bin/env bash
# Runs every test of the given packages (default ./...) through gotestsum in
# two phases: first all packages but the node-level e2e, in parallel; then
# the e2e package alone. The e2e scenarios set node-wide memory thresholds
# from the node's usage a moment earlier and time koordlet's reactions:
# another package's test binaries building or allocating beside them moved
# node memory by hundreds of MiB and made them flaky. Ends with the counts
# of tests run, passed, failed and skipped over both phases.
set -uo pipefail
GO=${GO:-go}
GOTESTSUM=${GOTESTSUM:-"$GO run gotest.tools/gotestsum@v1.13.0"}
counts=$(mktemp)
trap 'rm -f "$counts"' EXIT

mapfile -t pkgs < <($GO list "${@:-./...}")
unit=() e2e=()
for p in "${pkgs[@]}"; do
	case "$p" in
	*/test/e2e) e2e+=("$p") ;;
	*) unit+=("$p") ;;
	esac
done

rc=0
phase() {
	[ $# -gt 0 ] || return 0
	$GOTESTSUM --format testname \
		--post-run-command "sh -c 'echo \$TESTS_TOTAL \$TESTS_FAILED \$TESTS_SKIPPED >>$counts'" \
		-- -count=1 -timeout 30m "$@" || rc=1
}
phase "${unit[@]}"
phase "${e2e[@]}"

awk '{t+=$1; f+=$2; s+=$3} END {printf "tests: %d ran, %d passed, %d failed, %d skipped\n", t, t-f-s, f, s}' "$counts"
exit $rc
