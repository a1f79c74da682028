#!/usr/bin/env bash
# Runs every native Go fuzz target of the repository (func FuzzX(f *testing.F) in any
# _test.go, nested modules such as bench/peers/colly included), one after another, each
# for a fixed time, and prints a summary table. A crasher is written by go test under the
# package's testdata/fuzz/FuzzX/ and from then on runs as a regression case in every
# plain "go test"; commit it with the fix.
#
#   scripts/fuzz.sh                 each target 10 s (the short run)
#   scripts/fuzz.sh --time 1m       each target 1 minute
#   scripts/fuzz.sh --nightly       each target 10 minutes
#   scripts/fuzz.sh --list          list the targets and exit
#   scripts/fuzz.sh [flags] REGEXP  only targets whose "dir FuzzName" matches REGEXP
#
# Environment: FUZZ_PARALLEL (go test -parallel, default: all CPUs).
# Exit status: 0 when no target failed, 1 otherwise, 2 on bad usage. A run that ends
# "context deadline exceeded" at the fuzz time without writing a crasher is Go's own
# coordinator race (go.dev/issue/75804, fixed in Go 1.27): it is reported as "flake",
# not as a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

fuzztime=10s
list=0
filter=""
while [ $# -gt 0 ]; do
  case "$1" in
    --time) [ $# -ge 2 ] || { echo "fuzz.sh: --time needs a duration such as 30s or 10m" >&2; exit 2; }
            fuzztime=$2; shift 2 ;;
    --nightly) fuzztime=10m; shift ;;
    --list) list=1; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown flag $1 (use --time D, --nightly, --list or a REGEXP)" >&2; exit 2 ;;
    *) filter=$1; shift ;;
  esac
done
if ! [[ $fuzztime =~ ^[0-9]+(ns|us|ms|s|m|h)$|^[0-9]+x$ ]]; then
  echo "fuzz.sh: cannot use --time $fuzztime: give a Go duration such as 10s or 10m (or Nx for N inputs)" >&2
  exit 2
fi

# "dir<TAB>FuzzName" for every target, sorted.
targets=$(grep -rEn --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
  sed -E 's|^\./||; s|^(.*)/[^/]*:[0-9]+:func (Fuzz[A-Za-z0-9_]*).*|\1\t\2|' | sort -u)
if [ -n "$filter" ]; then
  targets=$(printf '%s\n' "$targets" | grep -E -- "$filter" || true)
fi
if [ -z "$targets" ]; then
  echo "fuzz.sh: no fuzz target matches ${filter:-anything}" >&2
  exit 2
fi
if [ $list = 1 ]; then
  printf '%s\n' "$targets" | tr '\t' ' '
  exit 0
fi

parallel=()
[ -n "${FUZZ_PARALLEL:-}" ] && parallel=(-parallel "$FUZZ_PARALLEL")
log=$(mktemp -d "${TMPDIR:-/tmp}/spider-fuzz-XXXXXX")
fails=0
flakes=0
total=0
summary=""
start_all=$(date +%s)
while IFS=$'\t' read -r dir name; do
  # The module holding the package: the nearest go.mod upwards.
  mod=$dir
  while [ "$mod" != "." ] && [ ! -f "$mod/go.mod" ]; do mod=$(dirname "$mod"); done
  rel=${dir#"$mod"}; rel=./${rel#/}
  [ "$rel" = "./" ] && rel=.
  total=$((total + 1))
  out="$log/$(echo "$dir" | tr / _)_$name.log"
  corpus="$root/$dir/testdata/fuzz/$name"
  before=$(ls "$corpus" 2>/dev/null | wc -l)
  t0=$(date +%s)
  # -timeout 0: go test's default 10m would end a 10-minute fuzz run as a failure; a
  # hanging input is still caught by the fuzzer's own per-input limit.
  (cd "$root/$mod" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -timeout 0 "${parallel[@]}" "$rel") >"$out" 2>&1
  rc=$?
  after=$(ls "$corpus" 2>/dev/null | wc -l)
  secs=$(( $(date +%s) - t0 ))
  execs=$(grep -Eo 'execs: [0-9]+' "$out" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  if [ $rc -eq 0 ]; then
    result=ok
  elif [ "$after" -eq "$before" ] && grep -q 'context deadline exceeded' "$out"; then
    result="flake (go.dev/issue/75804, no crasher)"
    flakes=$((flakes + 1))
  else
    result=FAILED
    fails=$((fails + 1))
    crasher=$(grep -Eo 'testdata/fuzz/[^ ]+' "$out" | head -1)
    [ -n "$crasher" ] && result="FAILED: crasher $dir/$crasher"
    echo "---- $dir $name (log $out):" >&2
    tail -30 "$out" >&2
  fi
  line=$(printf '| %s | %s | %s | %s s | %s |' "$dir" "$name" "$fuzztime" "$secs" "${execs:-0}")
  summary+="$line $result |"$'\n'
  echo "$line $result |"
done <<<"$targets"

echo
echo "fuzzing finished $(date -u +%Y-%m-%dT%H:%MZ): $total targets, $fails failed, $flakes flaked, $(( $(date +%s) - start_all )) s in all (logs in $log)"
echo
echo "| package | target | fuzz time | wall time (with build) | execs | result |"
echo "|---|---|---|---:|---:|---|"
printf '%s' "$summary"
[ $fails -eq 0 ]
