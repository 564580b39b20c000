#!/bin/bash
# Runs inside the guest for t_restart_v4.sh. Mounts SERVER:EXPORT with
# vers=4.1 (client A) and vers=4.2 (client B), opens and locks a file
# through A and writes half of it; then asks the host (through the shared
# directory SYNC) to SIGKILL and restart snfsd, and goes on writing with the
# same open file and lock: A must reclaim both in the grace period. B must
# not get the lock while A holds it. Prints "X|key value" lines.
# usage: restart_v4_guest.sh SERVER PORT EXPORT SYNC
set -u
SERVER=$1 PORT=$2 EXPORT=$3 SYNC=$4
mkdir -p /mnta /mntb
mount -t nfs -o "vers=4.1,port=$PORT,retry=0" "$SERVER:$EXPORT" /mnta || exit 1
mount -t nfs -o "vers=4.2,port=$PORT,retry=0" "$SERVER:$EXPORT" /mntb || exit 1
echo "X|mounted yes"
timeout 600 python3 - "$SYNC" <<'PY'
import fcntl, hashlib, os, sys, time
sync = sys.argv[1]
blk = bytes(range(256)) * 4096  # 1 MiB
f = open("/mnta/data", "w+b")
fcntl.lockf(f, fcntl.LOCK_EX)
f.write(blk); f.flush(); os.fsync(f.fileno())
open(sync + "/ready", "w").close()
while not os.path.exists(sync + "/restarted"):
    time.sleep(0.2)
# The same open file and lock, on the new server instance.
f.write(blk[::-1]); f.flush(); os.fsync(f.fileno())
print("X|written_after_restart yes", flush=True)
g = open("/mntb/data", "r+b")
try:
    fcntl.lockf(g, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("X|lock_kept no")
except OSError:
    print("X|lock_kept yes")
fcntl.lockf(f, fcntl.LOCK_UN)
f.close()
try:
    fcntl.lockf(g, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("X|lock_free_after_unlock yes")
except OSError:
    print("X|lock_free_after_unlock no")
g.close()
print("X|sha", hashlib.sha256(blk + blk[::-1]).hexdigest())
PY
echo "X|python $?"
umount /mnta
umount /mntb
exit 0
