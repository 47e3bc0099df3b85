#!/usr/bin/env bash
# compare.sh: kraft side by side with etcd raft (go.etcd.io/raft/v3 v3.6.0
# and v3.7.0, through RawNode), on the jobs both do:
#
#   LeaderAck  a leader handles a voter's ack in steady state
#              (kraft: a Fetch at the offset the voter already had;
#               etcd: a no-op MsgAppResp)
#   RoundTrip  one round trip in steady state
#              (kraft: leader handles Fetch, follower handles the response
#               and emits its next Fetch; etcd: follower handles
#               MsgHeartbeat, leader handles MsgHeartbeatResp)
#   Election   a fresh cluster elects a leader with pre-vote (etcd: and
#              check-quorum) until its first record is committed everywhere
#
# The three test binaries are built once and run in turns, one -count at a
# time, so that all sides see the same machine load. benchstat summarizes;
# the ratio table divides kraft's median by etcd's (below 1: kraft is
# faster or allocates less).
#
# Usage: benchmarks/compare.sh [-count N] [-benchtime D] [-out DIR]
# Defaults: -count 6, -benchtime 300ms, -out a fresh temporary directory.
# Needs only Go; installs benchstat into $(go env GOPATH)/bin if missing.
set -euo pipefail

count=6
benchtime=300ms
out=""
while [ $# -gt 0 ]; do
	case "$1" in
	-count) count="$2"; shift 2 ;;
	-benchtime) benchtime="$2"; shift 2 ;;
	-out) out="$2"; shift 2 ;;
	-h | --help) sed -n '2,26p' "$0"; exit 0 ;;
	*) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [ "$count" -lt 6 ]; then
	echo "compare.sh: -count must be at least 6 for benchstat's confidence intervals" >&2
	exit 2
fi

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
[ -n "$out" ] || out="$(mktemp -d "${TMPDIR:-/tmp}/kraft-compare.XXXXXX")"
mkdir -p "$out"

# benchstat: the version the project pins, unless one is on PATH already.
benchstat_version=v0.0.0-20260908200009-22c9c6c9d4da
benchstat="$(command -v benchstat || true)"
if [ -z "$benchstat" ]; then
	benchstat="$(go env GOPATH)/bin/benchstat"
	if [ ! -x "$benchstat" ]; then
		echo "installing benchstat $benchstat_version" >&2
		GOFLAGS= go install "golang.org/x/perf/cmd/benchstat@$benchstat_version"
	fi
fi

# Build the three test binaries once.
echo "building test binaries in $out" >&2
(cd "$root" && go test -c -o "$out/kraft.test" .)
(cd "$here/etcd36" && go test -c -o "$out/etcd36.test" .)
(cd "$here/etcd37" && go test -c -o "$out/etcd37.test" .)

pattern='^Benchmark(LeaderAck|RoundTrip|Election)$'
: >"$out/kraft.raw"
: >"$out/etcd36.raw"
: >"$out/etcd37.raw"
for i in $(seq 1 "$count"); do
	echo "round $i of $count" >&2
	for side in kraft etcd36 etcd37; do
		"$out/$side.test" -test.run '^$' -test.bench "$pattern" \
			-test.benchtime "$benchtime" -test.count 1 -test.benchmem \
			>>"$out/$side.raw"
	done
done

# Name alignment. kraft's LeaderAck pairs with etcd's at hwm=same (nothing
# new acknowledged, like a no-op MsgAppResp); each kraft result splits into
# a StepIn, a StepInto and a Step column by its api= suffix. pkg: lines go,
# so that benchstat puts all five columns in one table.
for api in StepIn StepInto Step; do
	grep -v '^pkg:' "$out/kraft.raw" |
		grep -v '/hwm=advance/' |
		grep -E "^Benchmark.*/api=$api-[0-9]+[[:space:]]|^[a-z]+:" |
		sed -E "s#/hwm=same##; s#/api=$api(-[0-9]+)#\\1#" >"$out/kraft-$api.txt"
done
for side in etcd36 etcd37; do
	grep -v '^pkg:' "$out/$side.raw" >"$out/$side.txt"
done

cd "$out"
echo
echo "== benchstat (medians, 95% confidence; columns: kraft StepIn, kraft StepInto, kraft Step, etcd v3.6.0, etcd v3.7.0)"
"$benchstat" kraft-StepIn=kraft-StepIn.txt kraft-StepInto=kraft-StepInto.txt kraft-Step=kraft-Step.txt \
	etcd-v3.6.0=etcd36.txt etcd-v3.7.0=etcd37.txt | tee benchstat.txt
"$benchstat" -format csv kraft-StepIn=kraft-StepIn.txt kraft-StepInto=kraft-StepInto.txt kraft-Step=kraft-Step.txt \
	etcd-v3.6.0=etcd36.txt etcd-v3.7.0=etcd37.txt >benchstat.csv 2>/dev/null

# Ratio table from benchstat's medians: kraft / etcd, per release.
echo
echo "== ratio kraft / etcd raft (median over median; < 1 means kraft is faster or allocates less)"
awk -F, '
	function num(s) { gsub(/[^0-9.eE+-]/, "", s); return s + 0 }
	function human(x, u) {
		if (x == "") return "-"
		if (u != "sec/op") return sprintf("%.0f", num(x))
		x = num(x) * 1e9
		if (x < 1000) return sprintf("%.1f ns", x)
		if (x < 1e6) return sprintf("%.2f us", x / 1e3)
		return sprintf("%.2f ms", x / 1e6)
	}
	function ratio(a, b) {
		if (a == "" || b == "") return "-"
		if (num(b) == 0) return num(a) == 0 ? "1.00" : "inf"
		return sprintf("%.2f", num(a) / num(b))
	}
	# Each benchstat table has two header rows: the input labels (each
	# label where its value column is), then the unit in every value column.
	$1 == "" && $2 != "" && $3 != "CI" { for (i = 2; i <= NF; i++) if ($i != "") col[$i] = i; next }
	$1 == "" && $3 == "CI" { unit = $2; next }
	$1 != "" && $1 != "geomean" && ("kraft-StepInto" in col) {
		name = $1; sub(/-[0-9]+$/, "", name)
		if (!(name in seen)) { seen[name] = 1; order[++n] = name }
		kn[name, unit] = $(col["kraft-StepIn"])
		ki[name, unit] = $(col["kraft-StepInto"]); ks[name, unit] = $(col["kraft-Step"])
		e6[name, unit] = $(col["etcd-v3.6.0"]); e7[name, unit] = $(col["etcd-v3.7.0"])
		has[name, unit] = 1
	}
	END {
		f = "%-18s %-9s %10s %10s %10s %10s %10s | %8s %8s | %8s %8s | %8s %8s\n"
		printf f, "job", "unit", "kraft In", "kraft Into", "kraft Step", "etcd 3.6", "etcd 3.7", "In/3.6", "In/3.7", "Into/3.6", "Into/3.7", "Step/3.6", "Step/3.7"
		split("sec/op allocs/op B/op", us, " ")
		for (i = 1; i <= n; i++) {
			name = order[i]
			for (j = 1; j <= 3; j++) {
				u = us[j]
				if (!((name, u) in has)) continue
				printf f, (j == 1 ? name : ""), u,
					human(kn[name, u], u), human(ki[name, u], u), human(ks[name, u], u), human(e6[name, u], u), human(e7[name, u], u),
					ratio(kn[name, u], e6[name, u]), ratio(kn[name, u], e7[name, u]),
					ratio(ki[name, u], e6[name, u]), ratio(ki[name, u], e7[name, u]),
					ratio(ks[name, u], e6[name, u]), ratio(ks[name, u], e7[name, u])
			}
		}
	}' benchstat.csv | tee ratios.txt
echo
echo "raw results, benchstat output and ratios are in $out" >&2
