#!/usr/bin/env bash
# The long form of the edge-mutant check: each test-only mutant of
# cmd/ipcfuzz/testdata/edgemutant (a bug at an edge few scripts reach) must
# be found by
#   - ipcfuzz compare MUTANT optimized --checks 2000, with --engine rapid
#     and with --engine gopter, on each of the seeds 1, 2 and 3, and
#   - IPCFUZZ_IMPLS=MUTANT,optimized go test -fuzz ... -fuzztime 20000x
#     -fuzzminimizetime 1x, from an empty fuzz cache, within 60 s.
# go test ./... holds the cheap half (props: TestGeneratorsReachTheEdges;
# cmd/ipcfuzz: TestEdgeMutantsAreFound, one seed each).
#
#   ci/edge-mutants.sh [OUT]        OUT default out/edge-mutants
#
# It prints one line per run and exits 1 if a mutant was missed or a fuzz
# run took more than 60 s, 2 if something could not be built. Failing fuzz
# inputs are moved from props/*/testdata/fuzz into OUT/testdata.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-out/edge-mutants}
mkdir -p "$out/bin" "$out/testdata" || exit 2
out=$(cd "$out" && pwd)
cd "$repo" || exit 2
go build -o "$out/bin/ipcfuzz" ./cmd/ipcfuzz || exit 2
status=0
now() { date +%s.%N; }
for m in earlywrap:ids:FuzzIDs keepmaxidx:ids:FuzzIDs noupperclamp:sem:FuzzSem norestart:sem:FuzzSem; do
	IFS=: read -r mut sub target <<<"$m"
	bin=$out/bin/$mut
	go build -ldflags "-X main.mutation=$mut" -o "$bin" ./cmd/ipcfuzz/testdata/edgemutant || exit 2
	for engine in rapid gopter; do
		for seed in 1 2 3; do
			start=$(now)
			json=$("$out/bin/ipcfuzz" compare "$bin" optimized --subsystem "$sub" --engine "$engine" --checks 2000 --seed "$seed" \
				--json --corpus "$out/findings/$mut-$engine-$seed" 2>/dev/null | tail -n 1)
			code=$?
			secs=$(echo "$(now) - $start" | bc)
			found=$(jq -r 'if .divergences > 0 then "found at script \(.findings[0].index + 1), shrunk to \(.findings[0].ops) ops, \(.findings[0].signature)" else "NOT FOUND in \(.checks) scripts" end' <<<"$json")
			[ "$code" = 1 ] || status=1
			printf '%-12s compare %-6s seed %s: %s (%.1f s)\n' "$mut" "$engine" "$seed" "$found" "$secs"
		done
	done
	dir=props/$sub/testdata/fuzz/$target
	before=$(ls "$dir")
	rm -rf "$out/fuzzcache/$mut"
	start=$(now)
	IPCFUZZ_IMPLS=$bin,optimized go test "./props/$sub" -run '^$' -fuzz "^$target\$" -fuzztime 20000x -fuzzminimizetime 1x \
		-args -test.fuzzcachedir="$out/fuzzcache/$mut" >"$out/$mut-fuzz.log" 2>&1
	code=$?
	secs=$(echo "$(now) - $start" | bc)
	for f in $(ls "$dir"); do
		grep -qx "$f" <<<"$before" || mv "$dir/$f" "$out/testdata/$mut-$f"
	done
	what=$(grep -o 'minimal script ([^)]*)' "$out/$mut-fuzz.log" | head -n 1)
	if [ "$code" != 1 ] || [ "$(echo "$secs > 60" | bc)" = 1 ]; then
		status=1
		what="MISSED or too slow (exit $code; $out/$mut-fuzz.log) $what"
	fi
	printf '%-12s go test -fuzz %s: exit %s in %.1f s, %s\n' "$mut" "$target" "$code" "$secs" "${what:-found (see $out/$mut-fuzz.log)}"
done
exit $status
