#!/bin/bash
# Run every test: unit test binaries (plain and ASan+UBSan builds), then the
# integration suites (tests/**/t_*.sh) against the sanitizer build of snfsd.
# Each test prints "ok - NAME" or "not ok - NAME" lines; a program that exits
# non-zero without saying why counts as one failure. Ends with the line
# "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
export ROOT
export SNFSD=${SNFSD:-$ROOT/build/asan/snfsd}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
LOG=$ROOT/build/test-logs
mkdir -p "$LOG"
pass=0
fail=0
only=${TESTS:-}

run_one() { # name timeout cmd...
	local name=$1 tmo=$2 out rc np nf
	shift 2
	out=$LOG/$(echo "$name" | tr '/ ' '__').log
	timeout -k 10 "$tmo" "$@" >"$out" 2>&1
	rc=$?
	np=$(grep -c '^ok ' "$out")
	nf=$(grep -c '^not ok ' "$out")
	if [ "$rc" != 0 ] && [ "$nf" = 0 ]; then
		echo "not ok - $name exited with status $rc" >>"$out"
		nf=1
	fi
	pass=$((pass + np))
	fail=$((fail + nf))
	printf '%-50s %4d passed %3d failed\n' "$name" "$np" "$nf"
	if [ "$nf" != 0 ]; then
		grep '^not ok' "$out" | head -20 | sed 's/^/    /'
		echo "    (log: $out)"
	fi
}

for bin in $(find build/tests build/asan/tests -type f -name 'test_*' ! -name '*.o' ! -name '*.d' 2>/dev/null | sort); do
	[ -n "$only" ] && ! echo "$bin" | grep -q "$only" && continue
	run_one "$bin" 300 "$bin"
done
for t in $(find tests -name 't_*.sh' | sort); do
	[ -n "$only" ] && ! echo "$t" | grep -q "$only" && continue
	run_one "$t" 1800 bash "$t"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
