#!/usr/bin/env bash
# runtime.sh: kraft's runtime (package node) side by side with
# hashicorp/raft v1.7.2: three voters in one process, clients appending at
# the leader until their record is committed, in memory and durably (TCP on
# loopback, fsynced logs). The program is benchmarks/hashicorp (its own
# module); every measurement runs in a fresh process of it, the libraries in
# turns, and it prints a markdown table of medians and kraft/hashicorp
# ratios. See benchmarks/README.md.
#
# Usage: benchmarks/runtime.sh [runtimebench flags]
#   -d 2s          timed phase of one measurement
#   -rounds 3      rounds (each: every cell once per library, kraft first)
#   -records 2000  records appended before the live heap is measured
#   -cells mem-100,mem-1k,durable-100,durable-1k
#   -clients 1,16,64
#   -libs kraft,hashicorp
#   -voters 3      voters per cluster (1: one writer on the disk, D350)
#   -cpuprofile F / -memprofile F   one profile per measurement, F.<lib>.<cell>.c<clients>.r<round>
#   -json F        every measurement as a JSON line
#   -v             every measurement as it ends, on stderr
# The default run takes about 5 minutes on 2 cores. Needs only Go.
# benchmarks/runtime.sh reads [-d 2s] [-rounds 3] [-clients 16] [-cells mem-100,durable-100]:
#   linearizable reads beside committed writes on one cluster (README, "Reads").
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
case "${1:-}" in
-h | --help) sed -n '2,23p' "$0"; exit 0 ;;
esac
bin="$(mktemp -d "${TMPDIR:-/tmp}/kraft-runtimebench.XXXXXX")"
trap 'rm -rf "$bin"' EXIT
(cd "$here/hashicorp" && go build -o "$bin/runtimebench" .)
"$bin/runtimebench" "$@"
