#!/bin/bash
# Fuzzing in `make check` (issue 7): build the libFuzzer targets if needed,
# replay every regression input under tests/fuzz/regress/<target>/, then run
# each target for FUZZ_SECONDS (default 30) over its seed corpus.
# See tests/fuzz/README.md.
cd "$(dirname "$0")/../.."
. tests/lib.sh
TARGETS=$(make -s print-FUZZ_TARGETS)

if ! command -v "$(make -s print-FUZZ_CC)" >/dev/null; then
	notok "fuzz: clang not installed (make deps-test)"
	exit 1
fi
if ! make -s fuzz-build >build/fuzz-build.log 2>&1; then
	notok "fuzz: building the fuzz targets failed (build/fuzz-build.log)"
	tail -20 build/fuzz-build.log | sed 's/^/#   /'
	exit 1
fi
ok "fuzz: targets built ($(echo $TARGETS))"
FUZZ_SECONDS=${FUZZ_SECONDS:-30} tests/fuzz/fuzz.sh -r $TARGETS
