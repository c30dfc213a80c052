#!/usr/bin/env bash
# Nightly fuzzing: one shard runs one job for DURATION and keeps what it
# found under corpus/ (upload that directory as the run's artifact; commit
# new files after review so that go test replays them forever).
#
#   ci/nightly.sh SHARD [DURATION]      SHARD: 0..7, DURATION: a Go duration (default 30m)
set -euo pipefail
cd "$(dirname "$0")/.."
shard=${1:?usage: ci/nightly.sh SHARD [DURATION]}
dur=${2:-30m}
seed=$(date +%Y%m%d)$shard   # a new seed each night, printed for reproduction
go build -o bin/ipcfuzz ./cmd/ipcfuzz
status=0
case "$shard" in
  0) bin/ipcfuzz compare optimized kernel --subsystem ids --time "$dur" --seed "$seed" --json || status=$? ;;
  1) bin/ipcfuzz compare naive optimized --subsystem ids --time "$dur" --seed "$seed" --engine gopter --json || status=$? ;;
  2) bin/ipcfuzz compare naive:alloc=legacy kernel --subsystem ids --equiv ids-renamed --time "$dur" --seed "$seed" --json || status=$? ;;
  3) go test ./props/ids -run '^$' -fuzz '^FuzzIDs$' -fuzztime "$dur" -fuzzminimizetime 1x || status=$? ;;
  4) bin/ipcfuzz compare optimized kernel --subsystem shm --time "$dur" --seed "$seed" --json || status=$? ;;
  5) bin/ipcfuzz compare optimized kernel --subsystem msg --time "$dur" --seed "$seed" --stats --json || status=$? ;;
  6) bin/ipcfuzz compare naive optimized --subsystem msg --time "$dur" --seed "$seed" --engine gopter --stats --json || status=$? ;;
  7) # the kernel side of these runs tasks as processes: minimize each new input once
     go test ./props/shm -run '^$' -fuzz '^FuzzShm$' -fuzztime "$dur" -fuzzminimizetime 1x || status=$?
     go test ./props/msg -run '^$' -fuzz '^FuzzMsg$' -fuzztime "$dur" -fuzzminimizetime 1x || status=$? ;;
  *) echo "unknown shard $shard (want 0..7)"; exit 2 ;;
esac
leaked=$(ipcs -a | awk '$1 ~ /^0x/' | wc -l)
[ "$leaked" -eq 0 ] || { echo "host IPC namespace holds $leaked objects"; exit 1; }
exit "$status"
