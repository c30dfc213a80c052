#!/usr/bin/env bash
# The offline rehearsal of the nightly run: every shard of the table
# (ipcfuzz list --shards) in parallel on this machine with a short budget,
# each into OUT/shard-N/ with its own fuzz cache, then the merge of all of
# them into a copy of the committed corpus (OUT/corpus, with its
# manifest.json) and a markdown summary (OUT/summary.md). The committed
# corpus/ is never written.
#
#   ci/local-shards.sh [BUDGET [OUT]]     BUDGET default 20s, OUT default out/local
#
# Exit status: 2 if a shard or the merge failed for want of infrastructure,
# or SysV IPC objects were left in the host namespace; else 1 if a shard
# found something; else 0. Needs what ci/nightly.sh needs (root for the
# kernel side, jq, timeout, ipcs).
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
budget=${1:-20s}
out=${2:-out/local}
say() { echo "local-shards: $*" >&2; }
leaked() { ipcs -a | awk '$1 ~ /^0x/' | wc -l; }

mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ipcfuzz-local-shards.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
IPCFUZZ=$scratch/ipcfuzz
export IPCFUZZ
(cd "$repo" && go build -o "$IPCFUZZ" ./cmd/ipcfuzz) || { say "building ipcfuzz failed"; exit 2; }
mapfile -t ids < <("$IPCFUZZ" list --shards | awk -F'\t' 'NR > 1 { print $1 }')
# Warm the build cache once (the property tests, and the instrumented
# builds of the fuzz shards, minutes cold), rather than in every shard at
# once while the others spend their budgets.
warm() {
	local pkg
	go test -count=1 -run '^$' ./props/... >/dev/null || return 1
	for pkg in $("$IPCFUZZ" list --shards | awk -F'\t' '$3 == "fuzz" { n = split($6, w, " "); print w[n] }'); do
		go test -c -o /dev/null -fuzz '^Fuzz' "$pkg" || return 1
	done
}
(cd "$repo" && warm) || { say "building the property tests failed"; exit 2; }
[ "${#ids[@]}" -gt 0 ] || { say "the shard table is empty"; exit 2; }
before=$(leaked)

say "${#ids[@]} shards in parallel, ${budget} each, into $out"
declare -A pid
for id in "${ids[@]}"; do
	"$repo/ci/nightly.sh" "$id" "$budget" "$out" >"$out/shard-$id.log" 2>&1 &
	pid[$id]=$!
done
worst=0
printf '%-6s %-24s %-15s %s\n' shard name status findings
for id in "${ids[@]}"; do
	wait "${pid[$id]}"
	st=$?
	[ "$st" -le 2 ] || st=2
	if [ "$st" -eq 2 ] || { [ "$st" -eq 1 ] && [ "$worst" -eq 0 ]; }; then worst=$st; fi
	sum="$out/shard-$id/summary.json"
	if [ -f "$sum" ]; then
		jq -r --arg id "$id" '"\($id)\t\(.name)\t\(.status)\t\([.findings[]?.signature] | join(" "))"' "$sum" |
			awk -F'\t' '{ printf "%-6s %-24s %-15s %s\n", $1, $2, $3, $4 }'
	else
		printf '%-6s %-24s %-15s %s\n' "$id" "?" "no summary" "see $out/shard-$id.log"
	fi
done

rm -rf "$out/corpus"
cp -r "$repo/corpus" "$out/corpus" || exit 2
shards=()
for id in "${ids[@]}"; do [ -d "$out/shard-$id" ] && shards+=("$out/shard-$id"); done
if ! "$IPCFUZZ" corpus merge "${shards[@]}" --into "$out/corpus" --summary "$out/summary.md" >"$out/merge.txt" 2>&1; then
	say "the merge failed: $(tail -n 1 "$out/merge.txt")"
	worst=2
fi
cat "$out/merge.txt"
say "merged corpus: $out/corpus (manifest $out/corpus/manifest.json), summary: $out/summary.md"

if [ "$(leaked)" -gt "$before" ]; then
	say "the host IPC namespace holds $(leaked) SysV objects (had $before):"
	ipcs -a >&2
	worst=2
fi
exit "$worst"
