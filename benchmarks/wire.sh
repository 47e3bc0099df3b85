#!/usr/bin/env bash
# wire.sh: three kraftd processes on Kafka's wire (-wire kafka) beside three
# on kraft's own wire (-wire kraft): the same clients appending records of
# the same size at the leader over HTTP until committed, a fresh static
# quorum per measurement (fsynced logs, TCP on loopback), the wires in
# turns. Prints appends/s, p50 and p99 per wire (medians over rounds) and
# the ratio kafka/kraft. The program is benchmarks/wirebench (its own
# module, standard library only); kraftd is built from cmd/kraftd.
#
# Usage: benchmarks/wire.sh [-d 3s] [-rounds 3] [-clients 16] [-size 100]
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
case "${1:-}" in
-h | --help) sed -n '2,11p' "$0"; exit 0 ;;
esac
bin="$(mktemp -d "${TMPDIR:-/tmp}/kraft-wirebench.XXXXXX")"
trap 'rm -rf "$bin"' EXIT
(cd "$here/../cmd/kraftd" && go build -o "$bin/kraftd" .)
(cd "$here/wirebench" && go build -o "$bin/wirebench" .)
"$bin/wirebench" -kraftd "$bin/kraftd" "$@"
