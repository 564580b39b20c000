#!/bin/bash
# Fuzzing in `make check` (issue 7): build the libFuzzer targets if needed,
# replay every regression input under tests/fuzz/regress/<target>/, then run
# each target for FUZZ_SECONDS (default 30) over its seed corpus
# (FUZZ_ONLY="TARGET..." for some of them).
# See tests/fuzz/README.md.
cd "$(dirname "$0")/../.."
. tests/lib.sh
TARGETS=${FUZZ_ONLY:-$(make -s print-FUZZ_TARGETS)}

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
# The server fixture grants made-up blocked NLM locks; it must never call
# anyone back (NLM_GRANTED through the portmapper on 127.0.0.1:111 would
# reach whatever lock manager is registered there). A listener on 111,
# when free, counts the connections.
CALLS=$(mktemp /tmp/snfs-fuzz-calls.XXXXXX)
listener=
if [ "$(id -u)" = 0 ] && ! port_busy 111; then
	python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 111)); s.listen(64)
n = 0
while True:
    c, _ = s.accept(); c.close(); n += 1
    open(sys.argv[1], "w").write("%d\n" % n)
' "$CALLS" &
	listener=$!
fi
FUZZ_SECONDS=${FUZZ_SECONDS:-30} tests/fuzz/fuzz.sh -r $TARGETS
if [ -n "$listener" ]; then
	kill "$listener" 2>/dev/null
	wait "$listener" 2>/dev/null
	n=$(cat "$CALLS" 2>/dev/null)
	check_eq "fuzz: the server fixture called no one (connections to 127.0.0.1:111)" 0 "${n:-0}"
fi
rm -f "$CALLS"
