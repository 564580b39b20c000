#!/bin/bash
# Grace and reclaim (RFC 8881 8.4.2): the Linux kernel client (4.1) holds
# an open file and a lock when snfsd is SIGKILLed and restarted with the
# same state directory; it reclaims both during the grace period and its
# workload finishes with the right data, while a second client (4.2) never
# gets the lock meanwhile.
set -u
. "$(dirname "$0")/../../lib.sh"
HERE=$ROOT/tests/server/nfs4
scratch
EXP=$T_DIR/export
SYNC=$T_DIR/sync
mkdir -p "$EXP" "$SYNC"
chmod 755 "$T_DIR"
chmod 777 "$SYNC"
OUT=$T_DIR/guest.out
if [ ! -x "$KVM" ]; then
	notok "restart v4: $KVM not found, skipping"
	exit 1
fi
PORT=$(free_port)
start() {
	if snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash"; then
		ok "snfsd listening on $PORT ($1)"
	else
		notok "snfsd listening on $PORT ($1)"
		tail -20 "$T_DIR/snfsd.log" >&2
		exit 1
	fi
}
start "first start"
cd "$ROOT" || exit 1
# A guest that dies at boot (a TCG panic before the command ran: see
# kvm_run in lib.sh) is booted once more.
for attempt in 1 2; do
	"$KVM" --timeout 900 --rw "$SYNC" -- bash "$HERE/restart_v4_guest.sh" 10.0.2.2 "$PORT" "$EXP" "$SYNC" >"$OUT" 2>"$T_DIR/guest.err" &
	GUEST=$!
	for _ in $(seq 1 6000); do
		[ -e "$SYNC/ready" ] && break
		kill -0 "$GUEST" 2>/dev/null || break
		sleep 0.1
	done
	[ -e "$SYNC/ready" ] && break
	wait "$GUEST"
	GUEST_RC=$? # reaped here: the wait below must not ask again
	{ [ ! -s "$OUT" ] && grep -q 'Kernel panic' "$T_DIR/guest.err"; } || break
	GUEST_RC=
	echo "# guest kernel panicked at boot (attempt $attempt): $(grep -m1 'RIP:' "$T_DIR/guest.err")"
done
check "guest opened, locked and wrote the first half" test -e "$SYNC/ready"
check "the client's record is on disk" test -s "$T_DIR/state/nfs4_clients"
pid=$SNFSD_PID
snfsd_stop KILL
check "snfsd pid $pid gone after SIGKILL" test ! -e /proc/"$pid"
start "after SIGKILL"
touch "$SYNC/restarted"
if [ -n "${GUEST_RC:-}" ]; then
	rc=$GUEST_RC
else
	wait "$GUEST"
	rc=$?
fi
check_eq "guest exit status" 0 "$rc"
[ "$rc" = 0 ] || tail -20 "$T_DIR/guest.err" | sed 's/^/# guest: /'
sed 's/^/# /' "$OUT"
for key in mounted written_after_restart lock_kept lock_free_after_unlock; do
	check_eq "after restart: $key" yes "$(grep "^X|$key " "$OUT" | cut -d' ' -f2)"
done
check_eq "guest workload finished" 0 "$(grep '^X|python ' "$OUT" | cut -d' ' -f2)"
want=$(grep '^X|sha ' "$OUT" | cut -d' ' -f2)
check_eq "data on disk after the restart" "$want" "$(sha256sum <"$EXP/data" | cut -c1-64)"
check "the server logged a grace period" grep -q "grace period of" "$T_DIR/snfsd.log"
check "the client reclaimed its open" grep -q "reclaims open state" "$T_DIR/snfsd.log"
check "the client reclaimed its lock" grep -q "reclaims lock state" "$T_DIR/snfsd.log"
check "grace ended when every client had reclaimed" grep -q "every client reclaimed" "$T_DIR/snfsd.log"
grep "nfs4:" "$T_DIR/snfsd.log" | sed 's/^/# log: /'
check "snfsd alive at the end" snfsd_alive
snfsd_stop TERM
check_eq "snfsd exits 0 on SIGTERM" 0 $?
check_no_sanitizer_reports restart-v4
[ "$T_FAILS" = 0 ]
