#!/bin/bash
# Run libFuzzer targets (already built in build/fuzz) for a bounded time.
#
#   tests/fuzz/fuzz.sh [-r] TARGET...
#
# Each target runs FUZZ_SECONDS (default 30) over its committed seeds
# (tests/fuzz/corpus/TARGET, never written to) plus a work corpus that
# receives new inputs: $FUZZ_WORK/TARGET when FUZZ_WORK is set (kept, for
# `make fuzz`), else a temporary directory. Prints
#   ok - fuzz TARGET: N execs, no crash
# or "not ok" with the crash input, which is also copied to
# build/fuzz-crashes/TARGET/ so it can become a regression input. With -r,
# first replays every input in tests/fuzz/regress/TARGET/ once
# ("ok - fuzz regress TARGET/FILE").
#
# The server targets share the fixture tree in /tmp/snfs-fuzz, so runs are
# serialized with flock on /tmp/snfs-fuzz.lock.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
FZ=$ROOT/build/fuzz
SECS=${FUZZ_SECONDS:-30}
CRASHES=$ROOT/build/fuzz-crashes
# libFuzzer reports leaks itself; abort_on_error would hide its summary.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
replay=
fails=0
if [ "${1:-}" = -r ]; then
	replay=1
	shift
fi

TMP=$(mktemp -d /tmp/snfs-fuzzrun.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

exec 9>/tmp/snfs-fuzz.lock
if ! flock -w 900 9; then
	echo "not ok - fuzz: /tmp/snfs-fuzz.lock stayed busy for 15 minutes"
	exit 1
fi

notok() {
	echo "not ok - $*"
	fails=$((fails + 1))
}

replay_one() { # target file
	local t=$1 f=$2 log=$TMP/replay.log
	if "$FZ/$t" -close_fd_mask=2 -runs=1 "$f" >"$log" 2>&1; then
		echo "ok - fuzz regress $t/$(basename "$f")"
	else
		notok "fuzz regress $t/$(basename "$f") crashes:"
		grep -E 'ERROR|SUMMARY|runtime error|#[0-9] ' "$log" | head -15 | sed 's/^/#   /'
	fi
}

fuzz_one() { # target
	local t=$1 log=$TMP/$1.log work seeds=$ROOT/tests/fuzz/corpus/$1 dict
	local n crash
	if [ -n "${FUZZ_WORK:-}" ]; then
		work=$FUZZ_WORK/$t
	else
		work=$TMP/work-$t
	fi
	mkdir -p "$work" "$TMP/art-$t"
	[ -d "$seeds" ] || seeds=
	# Every target but the record reader takes whole calls or arguments.
	dict=-dict=$ROOT/tests/fuzz/rpc.dict
	[ "$t" = fuzz_record ] && dict=
	"$FZ/$t" -max_total_time="$SECS" -close_fd_mask=2 \
		-print_final_stats=1 -timeout=20 -rss_limit_mb=2560 \
		-artifact_prefix="$TMP/art-$t/" $dict \
		"$work" $seeds >"$log" 2>&1
	n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	crash=$(ls "$TMP/art-$t/" 2>/dev/null | grep -v "^slow-unit-" | head -1)
	if [ -z "$crash" ] && grep -q '^Done [0-9]* runs' "$log"; then
		echo "ok - fuzz $t: ${n:-?} execs, no crash"
		return
	fi
	mkdir -p "$CRASHES/$t"
	[ -n "$crash" ] && cp "$TMP/art-$t/$crash" "$CRASHES/$t/"
	cp "$log" "$CRASHES/$t/last.log"
	notok "fuzz $t: crash after ${n:-?} execs: build/fuzz-crashes/$t/${crash:-?}"
	grep -E 'ERROR|SUMMARY|runtime error|#[0-9] |fuzz[_a-z]*: ' "$log" | head -25 | sed 's/^/#   /'
}

for t in "$@"; do
	if [ ! -x "$FZ/$t" ]; then
		notok "fuzz $t: $FZ/$t not built (make fuzz-build)"
		continue
	fi
	if [ -n "$replay" ] && [ -d "$ROOT/tests/fuzz/regress/$t" ]; then
		for f in "$ROOT/tests/fuzz/regress/$t"/*; do
			[ -f "$f" ] && replay_one "$t" "$f"
		done
	fi
	fuzz_one "$t"
done
[ "$fails" = 0 ]
