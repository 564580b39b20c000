#!/bin/bash
# NFSv4.0 against libnfs (nfs-ls, nfs-cat, nfs-cp with version=4: the 4.0
# client with SETCLIENTID, OPEN_CONFIRM and seqids), and the NFSv4.1/4.2
# probe of tools/peers (SEEK, READ_PLUS, ALLOCATE, DEALLOCATE), both against
# the ASan snfsd.
. "$(dirname "$0")/../../lib.sh"

if ! command -v nfs-ls >/dev/null; then
	echo "not ok - libnfs-utils not installed (make deps-test)"
	exit 1
fi
scratch
EXP=$T_DIR/export
mkdir -p "$EXP/sub/deeper"
PORT=$(free_port)
# readplus_min_hole=4k: the probe below wants every hole of a page or
# more as a hole, which the default gives only where sendfile pays from
# a page (v42.c rp_min_hole)
check "snfsd starts" snfsd_start "$PORT" --no-portmap \
	-e "$EXP:rw,insecure,no_root_squash,readplus_min_hole=4k"
Q="?version=4&nfsport=$PORT"
URL="nfs://127.0.0.1$EXP"

echo "hello over nfs4" >"$EXP/hello.txt"
echo inner >"$EXP/sub/deeper/inner.txt"
out=$(nfs-ls "$URL$Q" 2>&1)
check "4.0 nfs-ls lists hello.txt" grep -q ' hello.txt$' <<<"$out"
check "4.0 nfs-ls lists sub" grep -q ' sub$' <<<"$out"
out=$(nfs-ls "nfs://127.0.0.1/$Q" 2>&1)
first=$(echo "$EXP" | cut -d/ -f2)
check "4.0 nfs-ls of the pseudo root shows /$first" grep -q " $first\$" <<<"$out"
out=$(nfs-ls -R "$URL$Q" 2>&1)
check "4.0 nfs-ls -R reaches sub/deeper/inner.txt" grep -q 'inner.txt' <<<"$out"
mkdir "$EXP/many"
(cd "$EXP/many" && seq -f 'entry-with-a-longish-name-%05g' 1 3000 | xargs touch)
n=$(nfs-ls "$URL/many$Q" 2>/dev/null | grep -c 'entry-with-a-longish-name-')
check_eq "4.0 nfs-ls of 3000 entries (several READDIRs)" 3000 "$n"
check_eq "4.0 nfs-cat" "hello over nfs4" "$(nfs-cat "$URL/hello.txt$Q" 2>&1)"
# libnfs 4.0's nfs-cp fails on uploads of 4000 bytes or more against any
# server (nfs-ganesha too: it never sends the WRITE), so the upload is
# small; the download is several 1 MiB READs.
head -c 3000 /dev/urandom >"$T_DIR/up.src"
nfs-cp "$T_DIR/up.src" "$URL/up.dat$Q" >/dev/null 2>&1
check_eq "4.0 nfs-cp upload (OPEN exclusive create, SETATTR, WRITE, CLOSE)" \
	"$(sha256sum <"$T_DIR/up.src")" "$(sha256sum <"$EXP/up.dat" 2>/dev/null)"
head -c 3000000 /dev/urandom >"$EXP/big.dat"
check_eq "4.0 nfs-cat of 3 MB (several READs)" \
	"$(sha256sum <"$EXP/big.dat")" "$(nfs-cat "$URL/big.dat$Q" 2>/dev/null | sha256sum)"
nfs-cp "$URL/big.dat$Q" "$T_DIR/big.back" >/dev/null 2>&1
check_eq "4.0 nfs-cp download" "$(sha256sum <"$EXP/big.dat")" "$(sha256sum <"$T_DIR/big.back" 2>/dev/null)"
check "4.0 nfs-cat of a missing file fails" bash -c "! nfs-cat '$URL/missing$Q' >/dev/null 2>&1"

# NFSv4.2 operations through the probe: a file with data and holes.
P=$PEERS/nfs42probe.py
if [ -f "$P" ]; then
	python3 -c '
import sys
with open(sys.argv[1], "wb") as f:
    f.write(b"a" * 4096); f.seek(32768); f.write(b"b" * 4096); f.truncate(65536)' "$EXP/mixed"
out=$(python3 "$P" 127.0.0.1 "$PORT" "$EXP" ops mixed 2>&1)
	echo "$out" | sed 's/^/# /'
	check "probe: READ_PLUS gives D@0+4096 H@4096+28672 D@32768+4096 H@36864+28672" \
		grep -q 'eof=1 4 segment(s): D@0+4096 H@4096+28672 D@32768+4096 H@36864+28672' <<<"$out"
	check "probe: SEEK(DATA,5000) finds 32768" grep -q 'SEEK(DATA,5000)=(0, 32768)' <<<"$out"
	for o in SEEK READ_PLUS DEALLOCATE ALLOCATE COPY; do
		check "probe: $o OK" grep -qE "^$o +OK" <<<"$out"
	done
	check "probe: minor version 3 refused" grep -q 'minorversion 3: MINOR_VERS_MISMATCH' <<<"$out"
fi

check "snfsd alive" snfsd_alive
snfsd_stop TERM
check_eq "snfsd exits 0 on SIGTERM" 0 $?
check_no_sanitizer_reports libnfs-v4
[ "$T_FAILS" = 0 ]
