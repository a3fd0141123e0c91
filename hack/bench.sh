#!/usr/bin/env bash
# Runs the cost benchmarks (test/bench) against the pristine fork (GOWORK=off)
# and the patched one (go.work), interleaved so that machine drift hits both
# alike, and compares them with benchstat. Writes evidence/bench/{pristine,patched}.txt
# and evidence/benchstat.txt only when everything succeeded. BENCH_COUNT (10),
# BENCH_TIME (1s) and BENCH_FILTER (a -bench regexp, all by default) tune it.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${BENCH_COUNT:-10}
benchtime=${BENCH_TIME:-1s}
filter=${BENCH_FILTER:-.}
out=evidence
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcp-carry-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

bench() { go test -run '^$' -bench "$filter" -benchmem -count 1 -benchtime "$benchtime" ./test/bench; }

for i in $(seq "$count"); do
	echo "bench: run $i of $count (pristine, then patched)" >&2
	GOWORK=off bench >>"$tmp/pristine.txt"
	bench >>"$tmp/patched.txt"
done
GOWORK=off go tool benchstat pristine="$tmp/pristine.txt" patched="$tmp/patched.txt" >"$tmp/benchstat.txt"

mkdir -p "$out/bench"
mv "$tmp/pristine.txt" "$tmp/patched.txt" "$out/bench/"
mv "$tmp/benchstat.txt" "$out/benchstat.txt"
cat "$out/benchstat.txt"
