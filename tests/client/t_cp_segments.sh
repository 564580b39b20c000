#!/bin/bash
# Regression: `snfs cp` over NFSv4.2 of a file alternating 4 KiB of data and
# 4 KiB of hole read every range twice (its segment array held 64 entries,
# a 1 MiB READ_PLUS reply 256), so twice the file's bytes crossed the wire.
. "$(dirname "$0")/../lib.sh"
scratch
SNFS=${SNFS:-$ROOT/build/asan/snfs}
mkdir -p "$T_DIR/export" "$T_DIR/bin"
cc -O2 -o "$T_DIR/bin/mkfiles" "$PEERS/mkfiles.c" || { notok "build mkfiles"; exit 1; }
"$T_DIR/bin/mkfiles" seed "$T_DIR/export" 8 >/dev/null 2>&1
P=$(free_port)
# readplus_min_hole=4k: every hole of a page or more a hole (by default
# holes under the size from which sendfile pays go as zeros, v42.c
# rp_min_hole; that export is read below)
check "snfsd starts" snfsd_start "$P" --no-portmap -e "$T_DIR/export:rw,insecure,no_root_squash,readplus_min_hole=4k"
for f in mixed-4d mixed-4h mixed-32d hole data; do
	out=$("$SNFS" --stats cp -q "nfs://127.0.0.1:$P$T_DIR/export/$f?version=4.2" "$T_DIR/$f.copy" 2>&1 >/dev/null | tail -1)
	check "cp $f: content equal" cmp -s "$T_DIR/export/$f" "$T_DIR/$f.copy"
	rp=$(echo "$out" | sed -n 's/.* read_plus=\([0-9]*\).*/\1/p')
	rx=$(echo "$out" | sed -n 's/.* received=\([0-9]*\).*/\1/p')
	# the all-hole file: the first reply (alone: the mount has not seen
	# READ_PLUS work yet) says the hole runs to the end of the file
	if [ "$f" = hole ]; then
		check_eq "cp $f: one READ_PLUS for the whole hole" 1 "$rp"
	elif [ "$f" = data ]; then
		check_eq "cp $f: one READ_PLUS per MiB" 8 "$rp"
	else
		# half holes: after the first reply, calls span about 1.8 MiB
		# (the data and headers of one fill 7/8 of a 1 MiB reply)
		check "cp $f: 5 or 6 READ_PLUS for 8 MiB, half of it holes ($rp)" \
			test "${rp:-0}" -ge 5 -a "${rp:-99}" -le 6
	fi
	case $f in
	data) lim=$(((8 << 20) + 65536)) ;;
	hole) lim=65536 ;;
	*) lim=$(((4 << 20) + 65536)) ;; # half of it is holes
	esac
	if [ -n "$rx" ] && [ "$rx" -le "$lim" ]; then ok "cp $f: $rx bytes received (at most $lim)"; else notok "cp $f: $rx bytes received (more than $lim)"; fi
done
snfsd_stop
# The default export where sendfile pays only from 32 KiB (a real CPU):
# pieces under that would be copied one by one, so holes under 32 KiB go
# as zeros inside DATA. With mapped, holes under 8 KiB go as zeros, the
# others as holes, and the pieces between them under 32 KiB from a kept
# mapping. cp keeps the holes of the target either way, and the bytes
# are the file's.
for opts in "" ",mapped"; do
	P=$(free_port)
	SNFSD_SENDFILE_PAYS=32768 snfsd_start "$P" --no-portmap -e "$T_DIR/export:rw,insecure,no_root_squash$opts"
	n="default${opts:+ $opts}, sendfile from 32 KiB"
	check "snfsd starts ($n)" snfsd_alive
	for f in mixed-4d mixed-8d mixed-32d; do
		out=$("$SNFS" --stats cp -q "nfs://127.0.0.1:$P$T_DIR/export/$f?version=4.2" "$T_DIR/$f.copy2" 2>&1 >/dev/null | tail -1)
		check "$n, cp $f: content equal" cmp -s "$T_DIR/export/$f" "$T_DIR/$f.copy2"
		rx=$(echo "$out" | sed -n 's/.* received=\([0-9]*\).*/\1/p')
		if [ "$f" = mixed-4d ] || { [ "$f" = mixed-8d ] && [ -z "$opts" ]; }; then
			check "$n, cp $f: holes as zeros ($rx bytes received)" test "${rx:-0}" -ge $((8 << 20))
		else
			check "$n, cp $f: holes as holes ($rx bytes received)" test "${rx:-99999999}" -le $(((4 << 20) + 65536))
		fi
		check "$n, cp $f: the copy is sparse" \
			test "$(du -k "$T_DIR/$f.copy2" | cut -f1)" -lt 8192
		rm -f "$T_DIR/$f.copy2"
	done
	snfsd_stop
done
check_no_sanitizer_reports cp-segments
