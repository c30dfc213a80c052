#!/usr/bin/env bash
# One nightly fuzzing shard: row SHARD of the shard table runs for BUDGET and
# leaves everything it produced under OUT/shard-SHARD/ (see ci/README.md):
#
#   corpus/<subsystem>/SIG~A~B~HASH.ops  new findings, signed, one per signature
#   fuzzcache/<FuzzX>/               the go test -fuzz cache (kept across runs)
#   testdata/fuzz/<FuzzX>/           failing go test -fuzz inputs
#   testdata/rapid/<TestX>/*.fail    rapid fail files
#   summary.json                     the compare --json object plus shard,
#                                    seed, kernel, go, date, status
#   junit.xml                        via gotestsum; test.json, log.txt
#
#   ci/nightly.sh SHARD BUDGET OUT
#
# SHARD is a row of `ipcfuzz list --shards` (ci/shards.tsv); BUDGET is a Go
# duration (20s, 30m, 1h30m) or '-' for the row's own budget. Exit status:
# 0 nothing found, 1 a finding, 2 infrastructure (bad arguments, a build or
# setup failure, a run that did not end as it should, an infrastructure event
# of compare (its exit 3: a side killed from outside, the OOM killer or
# kill -9, whose scripts did not fail again alone), IPC objects left in the
# host namespace). summary.json is written whole or not at all. A fuzz failure whose input does not reproduce on
# fresh implementations is not a finding (status clean, the reason says so).
#
# Environment: IPCFUZZ an ipcfuzz binary to use (else one is built);
# IPCFUZZ_SHARDS a table file to read instead of the registry's (tests);
# IPCFUZZ_SEED the seed (default: the date and the shard, YYYYMMDDN);
# IPCFUZZ_IMPLS what fuzz targets compare (default naive,optimized,kernel);
# IPCFUZZ_IMAGE_STOCK and IPCFUZZ_IMAGE_PRE515 the kernel images of the
# shards on built kernels (kernel:image=$IPCFUZZ_IMAGE_...; the nightly
# kernels job builds them with ci/kernel.sh): a shard whose image is not
# set or not there is skipped, saying why (status clean, skipped true).
# Needs root for the kernel side (a private IPC namespace per script), jq,
# timeout and ipcs.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
# scratch holds what the run makes for itself (the fuzz test binary, an
# ipcfuzz built here, file listings); it goes when the script exits.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ipcfuzz-nightly.XXXXXX") || { echo "nightly: cannot make a scratch directory" >&2; exit 2; }
trap 'rm -rf "$scratch"' EXIT
dir=""     # OUT/shard-N once known
result=""  # the run's JSON object
status=2
reason=""
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t0=$SECONDS

say() { echo "nightly: $*" >&2; }

# infra stops with exit 2, leaving a summary when the shard directory exists.
infra() {
	reason="$*"
	say "$reason"
	status=2
	[ -n "$dir" ] && write_summary
	exit 2
}

# seconds turns a Go duration of hours, minutes and seconds into seconds.
seconds() {
	local d=$1 total=0 n
	[[ $d =~ ^([0-9]+h)?([0-9]+m)?([0-9]+s)?$ && -n $d ]] || return 1
	for n in "${BASH_REMATCH[@]:1}"; do
		case $n in
		*h) total=$((total + ${n%h} * 3600)) ;;
		*m) total=$((total + ${n%m} * 60)) ;;
		*s) total=$((total + ${n%s})) ;;
		esac
	done
	[ "$total" -gt 0 ] || return 1
	echo "$total"
}

# table prints the shard table (TSV with a header line).
table() {
	if [ -n "${IPCFUZZ_SHARDS:-}" ]; then
		cat "$IPCFUZZ_SHARDS"
	else
		"$IPCFUZZ" list --shards
	fi
}

# write_summary writes summary.json: the run's object plus where, when and how it ran.
write_summary() {
	local obj=${result:-"{}"} kernel gov
	kernel=$(uname -r)
	gov=$(go env GOVERSION 2>/dev/null || echo unknown)
	jq -c --arg shard "$shard" --arg name "${name:-}" --arg kind "${kind:-}" --arg command "${command:-}" \
		--arg budget "${budget:-}" --arg seed "${seed:-0}" --arg kernel "$kernel" --arg go "$gov" \
		--arg date "${started:0:10}" --arg started "$started" --arg finished "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		--arg status "$(status_name "$status")" --arg reason "$reason" --argjson elapsed "$((SECONDS - t0))" \
		'. + {seconds: (.seconds // $elapsed)} + {shard: ($shard|tonumber? // $shard), name: $name, kind: $kind, command: $command, budget: $budget,
		      seed: ($seed|tonumber? // $seed), kernel: $kernel, go: $go, date: $date, started: $started,
		      finished: $finished, status: $status, reason: $reason}' <<<"$obj" >"$dir/.summary.json.tmp" &&
		mv -f "$dir/.summary.json.tmp" "$dir/summary.json" ||
		{ rm -f "$dir/.summary.json.tmp"; say "cannot write $dir/summary.json"; status=2; }
}

status_name() {
	case $1 in 0) echo clean ;; 1) echo found ;; *) echo infrastructure ;; esac
}

# junit turns test2json events into junit.xml with gotestsum.
junit() {
	local events=$1
	(cd "$repo" && go tool gotestsum --junitfile "$dir/junit.xml" --format dots --raw-command -- cat "$events") >>"$dir/log.txt" 2>&1
	[ -s "$dir/junit.xml" ] || infra "gotestsum wrote no junit.xml (see $dir/log.txt)"
}

# compare_events makes test2json events of a compare result: one test for
# the run and one per finding (a signature's slashes would make subtests).
compare_events() {
	jq -c --arg pkg "ipcfuzz/$name" '
	  def ev(a; t; o): {Action: a, Package: $pkg, Test: t} + (if o == null then {} else {Output: o} end);
	  (.findings // []) as $f |
	  [ev("run"; "compare"; null),
	   ev("output"; "compare"; "\(.a) vs \(.b): \(.checks) checks, \(.divergences) divergences, \(.plugin_failures) plugin failures\n"),
	   ev(if ($f|length) > 0 then "fail" else "pass" end; "compare"; null)] +
	  [$f[] | ("finding " + (.signature | gsub("/"; ":"))) as $t |
	   ev("run"; $t; null), ev("output"; $t; "\(.signature): \(.hits) hits, \(.ops) ops: \(.script)\n"), ev("fail"; $t; null)] +
	  [{Action: (if ($f|length) > 0 then "fail" else "pass" end), Package: $pkg}] | .[]' <<<"$result"
}

# skip_shard ends a shard that cannot run here, saying why: status clean,
# checks 0, skipped true, and a skipped test in junit.xml.
skip_shard() {
	reason="skipped: $*"
	say "$reason"
	status=0
	result=$(jq -nc --arg sub "$subsystem" --arg reason "$reason" \
		'{a: "", b: "", subsystem: $sub, checks: 0, ops: 0, divergences: 0, plugin_failures: 0, interrupted: false,
		  scripts: [], findings: [], skipped: true}')
	jq -nc --arg pkg "ipcfuzz/$name" --arg reason "$reason" \
		'{Action: "run", Package: $pkg, Test: "compare"}, {Action: "output", Package: $pkg, Test: "compare", Output: ($reason + "\n")},
		 {Action: "skip", Package: $pkg, Test: "compare"}, {Action: "skip", Package: $pkg}' >"$dir/test.json"
	junit "$dir/test.json"
}

# images puts the kernel images in a compare's words: kernel:image=$VAR
# (a shard on the kernels the nightly kernels job builds with
# ci/kernel.sh) takes the image VAR names; it returns 1 when VAR names no
# image here.
images() {
	local i w v
	for i in "${!words[@]}"; do
		w=${words[$i]}
		[[ $w =~ ^kernel:image=\$([A-Z][A-Z0-9_]*)$ ]] || continue
		v=${BASH_REMATCH[1]}
		if [ -z "${!v:-}" ] || [ ! -f "${!v}" ]; then
			missing="no kernel image: \$$v names ${!v:-none} (the nightly kernels job builds the images with ci/kernel.sh and sets it)"
			return 1
		fi
		words[$i]="kernel:image=${!v}"
	done
}

# run_ipcfuzz runs the shard's command (words) with the arguments after
# the first two (killed past twice its budget and ten minutes), its output
# into result.json, and sets rc to its exit status and result to its last
# line, the summary. A run without a summary (one without the count $1) is
# infrastructure, and so is one that exits 0 having counted nothing ($2
# says what that means).
run_ipcfuzz() {
	local count=$1 nothing=$2
	shift 2
	timeout --preserve-status -s INT -k 60 $((secs * 2 + 600)) "$IPCFUZZ" "${words[@]}" "$@" >"$dir/result.json" 2>>"$dir/log.txt"
	rc=$?
	result=$(tail -n 1 "$dir/result.json")
	jq -e ".$count" >/dev/null 2>&1 <<<"$result" || { result=""; infra "ipcfuzz exited $rc without a summary: $(tail -n 1 "$dir/log.txt")"; }
	[ "$rc" != 0 ] || [ "$(jq ".$count" <<<"$result")" -gt 0 ] || infra "$nothing"
}

run_compare() {
	local words rc batch missing
	read -ra words <<<"${command#ipcfuzz }"
	if ! images; then
		skip_shard "$missing"
		return
	fi
	# A batch still running when the time is up is not counted: short
	# budgets get small batches (one script per second of budget, 8 to 256).
	batch=$((secs < 8 ? 8 : (secs > 256 ? 256 : secs)))
	run_ipcfuzz checks "compared nothing in ${secs}s (an overloaded machine, or a side that hangs)" \
		--time "${secs}s" --seed "$seed" --batch "$batch" --keep-going --json --corpus "$dir/corpus"
	case $rc in
	0) status=0 ;;
	1) status=1 ;;
	3) # A side killed from outside (the OOM killer, kill -9) whose scripts
		# did not fail again alone: infrastructure, not a bug.
		infra "infrastructure event, not a finding: $(jq -r '[.infrastructure_events[]? | "\(.side): \(.error): \(.reason)"] | first // "see log.txt"' <<<"$result")" ;;
	*) infra "ipcfuzz exited $rc: $(tail -n 1 "$dir/log.txt")" ;;
	esac
	compare_events >"$dir/test.json" || infra "cannot make test events of the result"
	junit "$dir/test.json"
}

# perf_events makes test2json events of a worst result: one test, failed
# when the search found a pattern above the shard's --fail-above.
perf_events() {
	jq -c --arg pkg "ipcfuzz/$name" --argjson failed "$1" '
	  def ev(a; t; o): {Action: a, Package: $pkg, Test: t} + (if o == null then {} else {Output: o} end);
	  (if $failed == 1 then "fail" else "pass" end) as $v |
	  [ev("run"; "worst"; null),
	   ev("output"; "worst"; "\(.a) vs \(.vs // "-"): \(.evaluated) candidates, steepest \(.search.fit.exponent // "none"): \(.file // "no pattern")\n"),
	   ev($v; "worst"; null), {Action: $v, Package: $pkg}] | .[]' <<<"$result"
}

# run_perf searches for the budget for a pattern on which the first
# implementation grows faster than the second (ipcfuzz worst); one above
# the threshold is a finding, written with its table and plot under perf/.
run_perf() {
	local words rc
	read -ra words <<<"${command#ipcfuzz }"
	run_ipcfuzz evaluated "measured no candidate in ${secs}s" \
		--budget "${secs}s" --seed "$seed" --candidates 100000 --json --out "$dir/perf"
	case $rc in
	0) status=0 ;;
	1) status=1 ;;
	*) infra "ipcfuzz exited $rc: $(tail -n 1 "$dir/log.txt")" ;;
	esac
	perf_events "$status" >"$dir/test.json" || infra "cannot make test events of the result"
	junit "$dir/test.json"
}

# new_files lists the files under a directory of the source tree that are
# not in a listing taken before.
new_files() {
	local before=$1 where=$2
	[ -d "$where" ] || return 0
	comm -13 "$before" <(find "$where" -type f | sort)
}

# keep moves new files of the source tree into the shard directory (or
# copies them, with copy, for committed files such as failing seeds).
keep() {
	local how=$1 f rel
	while read -r f; do
		[ -n "$f" ] || continue
		rel=${f#"$repo"/}
		rel=${rel#props/*/}
		mkdir -p "$dir/$(dirname "$rel")"
		if [ "$how" = copy ]; then cp "$f" "$dir/$rel"; else mv "$f" "$dir/$rel"; fi
		echo "$dir/$rel"
	done
}

# fuzz_target fuzzes one target for per seconds; it appends the test events
# and prints the failing inputs it kept.
fuzz_target() {
	local t=$1 pkgdir=$2 bin=$3 before rc
	before=$(mktemp "$scratch/before.XXXXXX")
	find "$pkgdir/testdata/fuzz/$t" -type f 2>/dev/null | sort >"$before"
	(cd "$pkgdir" && go tool test2json -t -p "$importpath" timeout --preserve-status -s INT -k 60 "$per" \
		"$bin" -test.v=test2json -test.run '^$' -test.fuzz "^$t\$" -test.fuzztime 1000000000x \
		-test.fuzzminimizetime 1x -test.fuzzcachedir "$dir/fuzzcache") >>"$dir/test.json" 2>>"$dir/log.txt"
	rc=$?
	new_files "$before" "$pkgdir/testdata/fuzz/$t" | keep move
	grep -o "failure while testing seed corpus entry: $t/[^\\\"]*" "$dir/test.json" | sed "s|.*: $t/||; s|\\\\n||" | sort -u |
		while read -r s; do echo "$pkgdir/testdata/fuzz/$t/$s"; done | keep copy
	rm -f "$before"
	return $rc
}

run_fuzz() {
	local pkg=${command##* } targets t n rc found=0 inputs bin
	local pkgdir="$repo/${pkg#./}"
	importpath=$(cd "$repo" && go list "$pkg") || infra "go list $pkg failed"
	targets=$(cd "$repo" && go test -list '^Fuzz' "$pkg" | grep '^Fuzz') || infra "no Fuzz target in $pkg"
	n=$(wc -w <<<"$targets")
	per=$((secs / n > 0 ? secs / n : 1))
	bin=$scratch/fuzz.test
	: >"$dir/test.json"
	inputs=()
	for t in $targets; do
		# Built outside the budget: the instrumented build takes minutes cold.
		(cd "$repo" && go test -c -fuzz "^$t\$" -o "$bin" "$pkg") >>"$dir/log.txt" 2>&1 || infra "building $t failed (see log.txt)"
		mapfile -t -O "${#inputs[@]}" inputs < <(fuzz_target "$t" "$pkgdir" "$bin")
		rc=${PIPESTATUS[0]}
		if grep -q '"Action":"fail","Package":"[^"]*","Test":"'"$t"'"' "$dir/test.json"; then
			found=1
		elif [ "$rc" -ne 0 ] && ! grep -q 'context deadline exceeded' "$dir/test.json"; then
			infra "fuzzing $t exited $rc with no failing test (see log.txt)"
		fi
	done
	fuzz_result "$found" "${inputs[@]}"
	junit "$dir/test.json"
}

# fuzz_result turns failing inputs into findings (ipcfuzz corpus import-fuzz)
# and sets the result object: import-fuzz's, or the fuzzer's counts.
fuzz_result() {
	local found=$1 execs impls=${IPCFUZZ_IMPLS:-naive,optimized,kernel}
	shift
	status=$found
	execs=$(grep -o 'execs: [0-9]*' "$dir/test.json" | tail -n 1 | grep -o '[0-9]*$')
	if [ "$#" -gt 0 ]; then
		"$IPCFUZZ" corpus import-fuzz "$@" --subsystem "$subsystem" --impls "$impls" --corpus "$dir/corpus" --json \
			>"$dir/result.json" 2>>"$dir/log.txt"
		result=$(tail -n 1 "$dir/result.json")
		jq -e .checks >/dev/null 2>&1 <<<"$result" || result=""
	fi
	[ -n "$result" ] || result=$(jq -nc --arg impls "$impls" --arg sub "$subsystem" --arg execs "${execs:-0}" \
		'{a: ($impls|split(",")|first), b: ($impls|split(",")|last), subsystem: $sub, checks: ($execs|tonumber), ops: 0, divergences: 0,
		  plugin_failures: 0, interrupted: false, scripts: [], findings: []}')
	# A failing input that its replay on fresh implementations does not
	# reproduce is not a finding: most often a fuzz worker stopped by the
	# budget's SIGINT while minimizing ("hung or terminated unexpectedly").
	# It stays in testdata/fuzz and failing_inputs, and the reason says so.
	if [ "$found" = 1 ] && [ -n "$result" ] && jq -e '.checks > 0 and .divergences == 0 and .plugin_failures == 0' >/dev/null 2>&1 <<<"$result"; then
		status=0
		reason="the fuzzer's $# failing input(s) did not reproduce on $impls: not a finding (kept in testdata/fuzz)"
		say "$reason"
	fi
	result=$(jq -c --arg execs "${execs:-0}" --argjson inputs "$(printf '%s\n' "$@" | jq -R . | jq -sc 'map(select(. != ""))')" \
		'del(.seconds, .ops_per_sec) + {fuzz_execs: ($execs|tonumber), failing_inputs: $inputs}' <<<"$result")
}

run_rapid() {
	local pkg=${command##* } round=0 rc before start=$SECONDS
	local pkgdir="$repo/${pkg#./}"
	before=$(mktemp "$scratch/before.XXXXXX")
	find "$pkgdir/testdata/rapid" -type f 2>/dev/null | sort >"$before"
	: >"$dir/test.json"
	while :; do
		(cd "$repo" && go test -json -count=1 -run '^Test' "$pkg" -args -rapid.seed=$((seed + round))) >>"$dir/test.json" 2>>"$dir/log.txt"
		rc=$?
		round=$((round + 1))
		[ "$rc" -eq 0 ] || break
		[ $((SECONDS - start)) -lt "$secs" ] || break
	done
	new_files "$before" "$pkgdir/testdata/rapid" | keep move >/dev/null
	rm -f "$before"
	if [ "$rc" -ne 0 ]; then
		grep -q '"Action":"fail","Package":"[^"]*","Test":' "$dir/test.json" || infra "go test exited $rc with no failing test (see log.txt)"
		status=1
	else
		status=0
	fi
	result=$(jq -nc --arg sub "$subsystem" --argjson rounds "$round" --argjson fails "$(find "$dir/testdata/rapid" -name '*.fail' 2>/dev/null | jq -R . | jq -sc .)" \
		'{a: "", b: "", subsystem: $sub, checks: 0, ops: 0, divergences: 0, plugin_failures: 0, interrupted: false,
		  scripts: [], findings: [], rapid_rounds: $rounds, rapid_fail_files: $fails}')
	result=$(jq -c --slurpfile ev "$dir/test.json" '.checks = ([$ev[] | select(.Action == "pass" and .Test != null)] | length)' <<<"$result")
	junit "$dir/test.json"
}

# leaked counts SysV objects in the host's IPC namespace.
leaked() { ipcs -a | awk '$1 ~ /^0x/' | wc -l; }

main() {
	[ $# -eq 3 ] || { say "usage: ci/nightly.sh SHARD BUDGET OUT"; exit 2; }
	shard=$1 budget=$2 out=$3
	[[ $shard =~ ^[0-9]+$ ]] || { say "SHARD $shard is not a number"; exit 2; }
	for tool in jq timeout ipcs go; do
		command -v "$tool" >/dev/null || { say "$tool is needed"; exit 2; }
	done
	if [ -z "${IPCFUZZ:-}" ]; then
		IPCFUZZ=$scratch/ipcfuzz
		(cd "$repo" && go build -o "$IPCFUZZ" ./cmd/ipcfuzz) || { say "building ipcfuzz failed"; exit 2; }
	fi
	row=$(table | awk -F'\t' -v id="$shard" 'NR > 1 && $1 == id') || { say "cannot read the shard table"; exit 2; }
	[ -n "$row" ] || { say "no shard $shard (the table has $(($(table | wc -l) - 1)) rows)"; exit 2; }
	IFS=$'\t' read -r _ name kind subsystem table_budget command <<<"$row"
	[ "$budget" = - ] && budget=$table_budget
	dir="$out/shard-$shard"
	mkdir -p "$dir" || { say "cannot make $dir"; exit 2; }
	(cd "$dir" && rm -rf corpus testdata summary.json junit.xml test.json result.json log.txt)
	seed=${IPCFUZZ_SEED:-$(date -u +%Y%m%d)$shard}
	secs=$(seconds "$budget") || infra "BUDGET $budget is not a duration such as 20s, 30m or 1h30m"
	before=$(leaked)
	say "shard $shard ($name, $kind): $command for ${secs}s, seed $seed, into $dir"
	case $kind in
	compare) run_compare ;;
	fuzz) run_fuzz ;;
	rapid) run_rapid ;;
	perf) case $command in
		"ipcfuzz compare "*) run_compare ;; # compare --perf: findings as compare's
		*) run_perf ;;
		esac ;;
	*) infra "shard $shard has an unknown kind $kind" ;;
	esac
	if [ "$(leaked)" -gt "$before" ]; then
		reason="the host IPC namespace holds $(leaked) SysV objects (had $before): ipcs -a"
		say "$reason"
		status=2
	fi
	write_summary
	say "shard $shard: $(status_name "$status") (exit $status)"
	exit "$status"
}

main "$@"
