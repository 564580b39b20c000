#!/bin/bash
# The Linux kernel NFSv3 client (in a QEMU guest, tools/kvm) against the ASan
# snfsd on 127.0.0.1:2049 with its own portmapper on port 111. The guest
# mounts without port options, runs fileops.sh on the mount and on tmpfs;
# the transcripts must match section by section, and what the guest saw must
# match the export directory on the host. Then a plain `mount host:/export
# /mnt` (no options at all) must negotiate NFSv4.2 on port 2049.
set -u
. "$(dirname "$0")/../lib.sh"
HERE=$ROOT/tests/interop
scratch
EXP=$T_DIR/export
mkdir -p "$EXP"
OUT=$T_DIR/guest.out

# Another test's server may hold the ports for a moment: wait up to a minute.
guest_server "kernel v3" "$EXP" || exit 1
pm=$(python3 - "$HERE" <<'EOF' 2>&1
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import nfsrpc as N
with N.Client("127.0.0.1", 111) as c:
    print(c.pmap_getport(N.NFS_PROG, 3), c.pmap_getport(N.MOUNT_PROG, 3),
          c.pmap_getport(N.MOUNT_PROG, 3, N.IPPROTO_UDP))
EOF
)
check_eq "portmap GETPORT NFS v3 tcp, MOUNT v3 tcp, MOUNT v3 udp" "2049 2049 2049" "$pm"

cd "$ROOT" || exit 1
t0=$(date +%s)
# KERNEL_NFILES: size of fileops' big directory. Each file costs a LOOKUP, a
# CREATE and a REMOVE, one after another (the client holds the directory
# lock), 25-35 ms in all in the CPU-emulated guest: the 10000 files of
# the acceptance take 5-7 minutes; KERNEL_NFILES=2000 for a quick run.
kvm_run "$OUT" "$T_DIR/guest.err" --timeout 1200 -- FILEOPS_NFILES="${KERNEL_NFILES:-10000}" \
	bash "$HERE/kernel_v3_guest.sh" 10.0.2.2 "$EXP"
rc=$?
echo "# guest ran $(($(date +%s) - t0))s, exit status $rc"
check_eq "guest exit status" 0 "$rc"
[ "$rc" = 0 ] || tail -30 "$T_DIR/guest.err" | sed 's/^/# guest: /'
grep '^G|' "$OUT" | cut -c3- | sed 's/^/# /'

# Each guest step must have succeeded (and have run at all).
for s in mount-tmpfs mount-nfs mkdir-nfs mkdir-local fileops-nfs fileops-local umount \
	mount-plain umount-plain; do
	check_eq "guest step $s" "$s 0" "$(grep "^R|$s " "$OUT" | cut -c3-)"
done
check_eq "plain 'mount host:/export /mnt' negotiates NFSv4.2" "plain-nfs4 vers=4.2" "$(grep '^R|plain-nfs' "$OUT" | cut -c3-)"
check_eq "plain mount: a file written reads back" "plain-readback written_over_the_plain_mount" "$(grep '^R|plain-readback' "$OUT" | cut -c3-)"

if grep -q '^R|rpcinfo' "$OUT"; then
	check_eq "guest rpcinfo -s lists NFS and MOUNT" "rpcinfo-lists-nfs-mountd 2" "$(grep '^R|rpcinfo' "$OUT" | cut -c3-)"
fi

# Transcripts, section by section.
grep '^N|' "$OUT" | cut -c3- >"$T_DIR/nfs.out"
grep '^L|' "$OUT" | cut -c3- >"$T_DIR/local.out"
section_of() { # file name
	awk -v s="== $2" '$0 == s { on = 1; next } /^== / { on = 0 } on' "$1"
}
sections=$(grep '^== ' "$T_DIR/local.out" | cut -c4-)
check "local transcript has sections" test -n "$sections"
for s in $sections; do
	section_of "$T_DIR/local.out" "$s" >"$T_DIR/l.$s"
	section_of "$T_DIR/nfs.out" "$s" >"$T_DIR/n.$s"
	if grep -qx "== $s" "$T_DIR/nfs.out" && cmp -s "$T_DIR/l.$s" "$T_DIR/n.$s"; then
		ok "fileops $s: NFS transcript matches tmpfs ($(wc -l <"$T_DIR/l.$s") lines)"
	else
		notok "fileops $s: NFS transcript differs from tmpfs"
		diff "$T_DIR/l.$s" "$T_DIR/n.$s" | head -20 | sed 's/^/#   /'
	fi
done
check_eq "NFS transcript has the same sections" "$(grep '^== ' "$T_DIR/local.out")" "$(grep '^== ' "$T_DIR/nfs.out")"

# What the guest read (caches dropped) is what the server's disk holds.
grep '^S|' "$OUT" | cut -c3- >"$T_DIR/guest.sum"
bash "$HERE/fileops.sh" --summary "$EXP/t" >"$T_DIR/host.sum" 2>&1
if [ -s "$T_DIR/host.sum" ] && cmp -s "$T_DIR/guest.sum" "$T_DIR/host.sum"; then
	ok "tree seen by the guest matches the export on the host ($(wc -l <"$T_DIR/host.sum") entries)"
else
	notok "tree seen by the guest matches the export on the host"
	diff "$T_DIR/host.sum" "$T_DIR/guest.sum" | head -20 | sed 's/^/#   /'
fi

echo "# NFS per-op counts (op: ops transmissions timeouts bytes_sent bytes_recv ...):"
grep '^M|' "$OUT" | cut -c3- | sed 's/^[[:space:]]*/#   /'
check "mountstats recorded NFS operations" grep -q '^M|.*WRITE:' "$OUT"

check "snfsd alive after the guest" snfsd_alive
snfsd_stop TERM
check_eq "snfsd exits 0 on SIGTERM" 0 $?
check_no_sanitizer_reports kernel-v3
[ "$T_FAILS" = 0 ]
