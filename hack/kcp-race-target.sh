#!/usr/bin/env bash
# Runs a make target of kcp's own Makefile (default test-e2e-shared-minimal-race,
# which kcp-patches/4-race-e2e-target adds) on a copy of a kcp tree with
# kcp-patches/ applied, as kcp's CI would run it, and records its cost
# (docs/races.md, "kcp's own race target").
#
#   hack/kcp-race-target.sh stock|carried [make target]
#
# stock builds kcp at its fork pin; carried points the carried fork modules at
# .overlay/ (`go mod edit -replace`, what kcp's pin bump does with the fork
# commit that has the fix; `make overlay` first). KCP_SOURCE is the kcp tree
# (read only), OUT the scratch directory (default .build/kcp-race-target),
# WHAT and TEST_ARGS are passed to kcp's make (default: its whole e2e suite),
# RUN names the run (default: the target).
# Copies the tree to OUT/<variant>/kcp (the same path each time, so that the
# go build cache serves the next run) and writes OUT/<variant>/<run>/
# {make.log,result.txt,findings.md}: the exit status (also its own), the wall time of each
# phase, the kcp server's peak RSS (VmHWM), the race reports' files and
# functions, and the reports grouped against docs/races.known
# (hack/racefindings).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

variant=${1:?usage: $0 stock|carried [make target]}
target=${2:-test-e2e-shared-minimal-race}
case $variant in stock | carried) ;; *) echo "$0: variant $variant: want stock or carried" >&2 && exit 2 ;; esac
: "${KCP_SOURCE:?set KCP_SOURCE=<kcp source tree>}"
[ -f "$KCP_SOURCE/go.mod" ] || { echo "$0: KCP_SOURCE=$KCP_SOURCE has no go.mod" >&2 && exit 2; }
# Absolute: git and make run inside the tree.
tree=$(realpath -m "${OUT:-$root/.build/kcp-race-target}")/$variant/kcp
out=$(dirname "$tree")/${RUN:-$target}

rm -rf "$tree" "$out" && mkdir -p "$tree" "$out"
GOWORK=off go build -o "$out/racefindings" ./hack/racefindings
cp -a "$KCP_SOURCE/." "$tree"
git() { command git -C "$tree" -c user.name=kcp-race-target -c user.email=kcp-race-target@localhost "$@"; }
git init -q && git add -A -f . && git commit -q -m "kcp tree from $KCP_SOURCE"
# The kcp-patches pull requests in merge order, each in its main form or,
# where that does not apply to the tree, the first backport form
# (<pull request>/release-X.Y/) that does.
am_series() { # the series file of one form
	while read -r p; do
		case $p in '' | '#'*) continue ;; esac
		# The patches name no author (carry export sets the submitter).
		sed '1a From: kcp-race-target <kcp-race-target@localhost>' "$root/$(dirname "$1")/$p" >"$out/am.patch"
		git am -q --keep-non-patch "$out/am.patch" || return 1
		echo "applied $(dirname "$1")/$p"
	done <"$1"
}
for pr in $(ls -d kcp-patches/[0-9]*/ | sort -t/ -k2 -n); do
	base=$(git rev-parse HEAD)
	applied=
	for series in "$pr"series "$pr"release-*/series; do
		[ -f "$series" ] || continue
		if am_series "$series" 2>"$out/am.err"; then
			applied=$series && break
		fi
		git am --abort 2>/dev/null || true
		git reset -q --hard "$base"
	done
	[ -n "$applied" ] || { cat "$out/am.err" >&2; echo "$0: no form of $pr applies to $KCP_SOURCE" >&2; exit 2; }
done
if [ "$variant" = carried ]; then
	[ -d .overlay ] || { echo "$0: no .overlay/: run make overlay" >&2 && exit 2; }
	for mod in $(cd .overlay && find . -mindepth 2 -maxdepth 4 -name go.mod -printf '%h\n' | sed 's,^\./,,'); do
		(cd "$tree" && go mod edit -replace="$mod=$root/.overlay/$mod")
		echo "carried: $mod => .overlay/$mod"
	done
	git commit -q -a -m "carried modules from the overlay"
fi

# The kcp server's peak RSS: VmHWM of every process running bin/kcp of this
# tree, sampled until the run ends. And what the job's pod holds while the
# tests run: the summed VmRSS of the processes of the run (this tree's
# binaries, and the test binaries, whose arguments name the work directory),
# one line per sample.
peak=$out/kcp-vmhwm
(
	while sleep 5; do
		sum=0
		for p in /proc/[0-9]*; do
			exe=$(readlink "$p/exe" 2>/dev/null) || continue
			if [ "$exe" = "$tree/bin/kcp" ]; then
				awk -v pid="${p#/proc/}" '/^VmHWM/ {print pid, $2}' "$p/status" 2>/dev/null >>"$peak" || true
			fi
			case $exe in "$tree/bin/"*) ;; *) tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF "$out/work" || continue ;; esac
			sum=$((sum + $(awk '/^VmRSS/ {print $2}' "$p/status" 2>/dev/null || echo 0)))
		done
		echo "$(date +%s) $sum" >>"$out/run-rss"
	done
) &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT

make_args=("$target" WORK_DIR="$out/work")
[ -n "${WHAT:-}" ] && make_args+=(WHAT="$WHAT")
[ -n "${TEST_ARGS:-}" ] && make_args+=(TEST_ARGS="$TEST_ARGS")
# The tree lies under this repository, whose go.work (the overlay) would
# capture kcp's builds: kcp builds with its own go.mod, as in its CI.
export GOWORK=off
start=$(date +%s)
set +e
(cd "$tree" && /usr/bin/time -v -o "$out/time.txt" make "${make_args[@]}") 2>&1 |
	while IFS= read -r line; do printf '%s %s\n' "$(($(date +%s) - start))" "$line"; done >"$out/make.log"
rc=${PIPESTATUS[0]}
set -e
end=$(date +%s)

reports=$(ls "$out/work/.kcp-race"/race.* 2>/dev/null || true)
# The seconds column of make.log's first line containing (mark) or reading
# (line) a text: make echoes a recipe's commands before they run.
mark() { awk -v pat="$1" 'index($0, pat) {print $1; exit}' "$out/make.log"; }
line() { awk -v pat="$1" '{l = $0; sub(/^[0-9]+ /, "", l)} l == pat {print $1; exit}' "$out/make.log"; }
built=$(mark "mkdir -p \"$out/work/.kcp\"")
tests=$(line "Starting test(s)")
{
	echo "kcp tree: $KCP_SOURCE ($variant), make ${make_args[*]}"
	echo "exit status: $rc"
	echo "wall: $((end - start)) s (build done at ${built:-?} s, kcp ready at ${tests:-?} s)"
	if [ -s "$peak" ]; then
		sort -k2 -n "$peak" | tail -n 1 | awk '{printf "kcp server peak RSS (VmHWM): %.2f GiB (pid %s)\n", $2/1048576, $1}'
	else
		echo "kcp server peak RSS (VmHWM): no bin/kcp process seen"
	fi
	[ -s "$out/run-rss" ] && sort -k2 -n "$out/run-rss" | tail -n 1 |
		awk '{printf "peak summed RSS of the servers and test binaries of the run: %.2f GiB\n", $2/1048576}'
	grep -E 'Maximum resident set size|Elapsed \(wall' "$out/time.txt" | sed 's/^\t*/make: /' || true
	grep -E '^[0-9]+ (ok|FAIL|---)' "$out/make.log" | cut -d' ' -f2- || true
	echo "race report files: $(echo "$reports" | grep -c . || true)"
	for f in $reports; do
		echo "$f: $(grep -c 'WARNING: DATA RACE' "$f") report(s), functions: $(grep -oE 'setKCPOriginalAPIVersionAnnotation|updateInformers|RESTMapping' "$f" | sort | uniq -c | xargs)"
	done
} | tee "$out/result.txt"
[ -z "$reports" ] || "$out/racefindings" "$out/work/.kcp-race" >"$out/findings.md"
# kcp's make decides the exit status.
exit "$rc"
