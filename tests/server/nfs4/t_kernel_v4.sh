#!/bin/bash
# The Linux kernel NFSv4.0, 4.1 and 4.2 clients (one QEMU guest,
# tools/kvm) against the ASan snfsd on a free port (--no-portmap): the
# part-1 fileops.sh (10,000 files in its big directory) on each mount must
# give the tmpfs transcript, the 4.2 extras (fallocate -l/-p,
# SEEK walk, copy_file_range, reflink copy) must give what tmpfs gives, locks
# must conflict between the two clients, and the 4.2 mount's statistics must
# show READ_PLUS, SEEK, ALLOCATE and DEALLOCATE calls.
set -u
. "$(dirname "$0")/../../lib.sh"
HERE=$ROOT/tests/server/nfs4
scratch
EXP=$T_DIR/export
mkdir -p "$EXP"
chmod 755 "$T_DIR"
OUT=$T_DIR/guest.out

if [ ! -x "$KVM" ]; then
	notok "kernel v4: $KVM not found, skipping"
	exit 1
fi
PORT=$(free_port)
if snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash"; then
	ok "snfsd listening on $PORT"
else
	notok "snfsd listening on $PORT"
	tail -20 "$T_DIR/snfsd.log" >&2
	exit 1
fi

cd "$ROOT" || exit 1
t0=$(date +%s)
kvm_run "$OUT" "$T_DIR/guest.err" --timeout 1800 -- bash "$HERE/kernel_v4_guest.sh" 10.0.2.2 "$PORT" "$EXP"
rc=$?
echo "# guest ran $(($(date +%s) - t0))s, exit status $rc"
mkdir -p "$ROOT/build/test-logs"
cp "$OUT" "$ROOT/build/test-logs/kernel_v4_guest.out" 2>/dev/null
check_eq "guest exit status" 0 "$rc"
[ "$rc" = 0 ] || tail -30 "$T_DIR/guest.err" | sed 's/^/# guest: /'
grep '^G|' "$OUT" | cut -c3- | sed 's/^/# /'

for s in mount-tmpfs mount-42 mount-41 mount-40 mkdir-42 mkdir-41 mkdir-40 \
	mkdir-local fileops-42 fileops-41 fileops-40 fileops-local umount-41 umount-42; do
	check_eq "guest step $s" "$s 0" "$(grep "^R|$s " "$OUT" | cut -c3-)"
done

# Transcripts, section by section, for each mount against tmpfs.
grep '^L|' "$OUT" | cut -c3- >"$T_DIR/local.out"
grep '^N|' "$OUT" | cut -c3- >"$T_DIR/n42.out"
grep '^O|' "$OUT" | cut -c3- >"$T_DIR/n41.out"
grep '^P|' "$OUT" | cut -c3- >"$T_DIR/n40.out"
section_of() { # file name
	awk -v s="== $2" '$0 == s { on = 1; next } /^== / { on = 0 } on' "$1"
}
sections=$(grep '^== ' "$T_DIR/local.out" | cut -c4-)
check "local transcript has sections" test -n "$sections"
for v in 42 41 40; do
	for s in $sections; do
		section_of "$T_DIR/local.out" "$s" >"$T_DIR/l.$s"
		section_of "$T_DIR/n$v.out" "$s" >"$T_DIR/n$v.$s"
		# (a section may be empty, like "end": then both must be)
		if grep -qx "== $s" "$T_DIR/n$v.out" && cmp -s "$T_DIR/l.$s" "$T_DIR/n$v.$s"; then
			ok "vers=4.${v#4} fileops $s: transcript matches tmpfs"
		else
			notok "vers=4.${v#4} fileops $s: transcript differs from tmpfs"
			diff "$T_DIR/l.$s" "$T_DIR/n$v.$s" | head -20 | sed 's/^/#   /'
		fi
	done
done

grep '^S|' "$OUT" | cut -c3- >"$T_DIR/guest.sum"
bash "$ROOT/tests/interop/fileops.sh" --summary "$EXP/t42" >"$T_DIR/host.sum" 2>&1
if [ -s "$T_DIR/host.sum" ] && cmp -s "$T_DIR/guest.sum" "$T_DIR/host.sum"; then
	ok "4.2 tree seen by the guest matches the export on the host"
else
	notok "4.2 tree seen by the guest matches the export on the host"
	diff "$T_DIR/host.sum" "$T_DIR/guest.sum" | head -20 | sed 's/^/#   /'
fi

# NFSv4.2 extras: the mount must say what tmpfs says.
grep '^X|nfs ' "$OUT" | cut -c7- >"$T_DIR/x.nfs"
grep '^X|local ' "$OUT" | cut -c9- >"$T_DIR/x.local"
sed 's/^/# nfs:   /' "$T_DIR/x.nfs"
for key in alloc_size punch mixed_sum walk reread_sum cfr_bytes cfr_sum reflink_sum; do
	l=$(grep "^$key " "$T_DIR/x.local")
	n=$(grep "^$key " "$T_DIR/x.nfs")
	if [ -n "$l" ] && [ "$l" = "$n" ]; then
		ok "4.2 extra $key as on tmpfs"
	else
		notok "4.2 extra $key: tmpfs '$(echo $l)' vs nfs '$(echo $n)'"
	fi
done
for key in flock_conflict flock_after_release fcntl_overlap_conflict fcntl_disjoint_ok; do
	check_eq "lock between two clients: $key" "yes" "$(grep "^X|lock $key " "$OUT" | cut -d' ' -f3)"
done

check_eq "vers=4.0 mounts" "mount-40 0" "$(grep "^R|mount-40 " "$OUT" | cut -c3-)"
check_eq "vers=4.0 data written and read back" \
	"$(grep '^X|v40 expect_sum ' "$OUT" | cut -d' ' -f3)" \
	"$(grep '^X|v40 numbers_sum ' "$OUT" | cut -d' ' -f3)"
check_eq "vers=4.0 rename, symlink" "renamed" "$(grep '^X|v40 readlink ' "$OUT" | cut -d' ' -f3)"
check_eq "vers=4.0 listing" "renamed sl " "$(grep '^X|v40 ls ' "$OUT" | cut -d' ' -f3-)"
check_eq "vers=4.0 lock conflicts with the 4.1 client's" yes "$(grep '^X|v40 lock_conflict ' "$OUT" | cut -d' ' -f3)"
check_eq "vers=4.0 cleanup" ok "$(grep '^X|v40 cleanup ' "$OUT" | cut -d' ' -f3)"
check_eq "vers=4.0 unmounts" "umount-40 0" "$(grep "^R|umount-40 " "$OUT" | cut -c3-)"

echo "# 4.2 per-op counts (op: ops transmissions timeouts bytes_sent bytes_recv ...):"
grep '^M|' "$OUT" | cut -c3- | sed 's/^[[:space:]]*/#   /'
for op in READ_PLUS SEEK ALLOCATE DEALLOCATE COPY; do
	check "mountstats of the 4.2 mount show $op calls" grep -qE "^M\|[[:space:]]*$op: [1-9]" "$OUT"
done

check "snfsd alive after the guest" snfsd_alive
snfsd_stop TERM
check_eq "snfsd exits 0 on SIGTERM" 0 $?
check_no_sanitizer_reports kernel-v4
[ "$T_FAILS" = 0 ]
