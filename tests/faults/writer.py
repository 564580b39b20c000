#!/usr/bin/env python3
"""A write stream that survives snfsd being SIGKILLed under it (issue 7,
"Faults"). This process starts snfsd itself (the command after "--") so that
it can kill it at chosen points of the stream and restart it.

usage: writer.py PORT EXPORT NAME SIZE_MIB TRIALS SEED LOG -- SNFSD ARGV...

The stream writes SIZE_MIB chunks of 1 MiB, a deterministic pattern per
chunk, to EXPORT/NAME over NFSv3 with up to WINDOW calls in flight. About a
third of the chunks go FILE_SYNC, the rest UNSTABLE followed by COMMITs. A
chunk counts as acknowledged (durable) when a WRITE reply said FILE_SYNC or
when a COMMIT with the same verifier as its WRITE came back (RFC 1813
section 3.3.7 / 3.3.21); that COMMIT must have been sent after the WRITE
reply arrived.

TRIALS times, when the bytes written (WRITE replies, resends included)
pass a random offset, a killer thread
waits 0-30 ms (so the kill lands inside requests, fsyncs, between WRITE and
COMMIT) and SIGKILLs snfsd, then restarts it after 0.1-0.5 s with the same
arguments. The client does what a real one must: on connection loss it
reconnects (waiting for the restart), requeues everything in flight, and
when a COMMIT answers with a verifier other than the one a WRITE got it
sends that WRITE again. After every restart it compares the file on the
server's disk (EXPORT/NAME, read locally) with the pattern over all
acknowledged chunks and prints one ok/not ok line with the bytes lost.
At the end the whole file must equal the pattern.
"""

import collections
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import nfsrpc as N  # noqa: E402
from nfsrpc import check, info  # noqa: E402

MIB = 1 << 20
WINDOW = 6            # calls in flight
COMMIT_EVERY = 6      # uncommitted UNSTABLE chunks that trigger a COMMIT
RECONNECT_SECONDS = 60


def pattern(seed, i):
    return random.Random((seed << 32) | i).randbytes(MIB)


class Server:
    """snfsd as a child process that can be killed and restarted."""

    def __init__(self, argv, log, port):
        self.argv, self.log, self.port = argv, log, port
        self.proc = None
        self.starts = 0

    def start(self):
        with open(self.log, "ab") as f:
            self.proc = subprocess.Popen(self.argv, stdout=f, stderr=subprocess.STDOUT)
        self.starts += 1
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                return True
            except OSError:
                time.sleep(0.05)
        return False

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        return self.proc.wait()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


class Killer(threading.Thread):
    """Kills and restarts the server each time it is poked."""

    def __init__(self, server, rng):
        super().__init__(daemon=True)
        self.server, self.rng = server, rng
        self.poke = threading.Semaphore(0)
        self.lock = threading.Lock()
        self.pending = 0      # pokes not yet served
        self.kills = 0
        self.restart_failed = False
        self.quit = False

    def request(self):
        with self.lock:
            self.pending += 1
        self.poke.release()

    def busy(self):
        with self.lock:
            return self.pending > 0

    def run(self):
        while True:
            self.poke.acquire()
            if self.quit:
                return
            time.sleep(self.rng.uniform(0, 0.03))
            self.server.kill()
            self.kills += 1
            time.sleep(self.rng.uniform(0.1, 0.5))
            if not self.server.start():
                self.restart_failed = True
            with self.lock:
                self.pending -= 1


class Stream:
    def __init__(self, port, export, name, nchunks, seed):
        self.port, self.path, self.seed = port, os.path.join(export, name), seed
        self.export, self.name, self.n = export, name, nchunks
        self.rng = random.Random(seed)
        self.stable = [self.rng.random() < 0.33 for _ in range(nchunks)]
        self.todo = collections.deque(range(nchunks))
        self.durable = set()
        self.unstable = {}     # chunk -> verifier of its WRITE reply
        self.uncovered = set()  # unstable chunks in no COMMIT in flight
        self.inflight = {}     # xid -> ("W", chunk) or ("C", [(chunk, verf)])
        self.sock = None
        self.xid = random.Random(seed + 1).randrange(1 << 30)
        self.verf = None       # verifier of the current server instance
        self.verfs_seen = []
        self.sent_bytes = 0
        self.replied_bytes = 0  # WRITE replies received, resends included
        self.resent = 0
        self.errors = []

    # -- wire --
    def connect(self):
        deadline = time.monotonic() + RECONNECT_SECONDS
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", self.port), 2)
                self.sock.settimeout(30)
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.05)

    def send(self, proc, args, what):
        self.xid = (self.xid + 1) & 0xFFFFFFFF
        msg = N.build_call(self.xid, N.NFS_PROG, 3, proc, args)
        self.inflight[self.xid] = what
        self.sock.sendall(N.record_mark(msg))

    def send_write(self, i):
        how = N.FILE_SYNC if self.stable[i] else N.UNSTABLE
        data = pattern(self.seed, i)
        args = N.Packer().opaque(self.fh).u64(i * MIB).u32(MIB).u32(how).opaque(data).bytes()
        self.send(N.NFSPROC3_WRITE, args, ("W", i))
        self.sent_bytes += MIB

    def send_commit(self):
        snap = [(i, self.unstable[i]) for i in sorted(self.uncovered)]
        self.uncovered.clear()
        self.send(N.NFSPROC3_COMMIT, N.Packer().opaque(self.fh).u64(0).u32(0).bytes(), ("C", snap))

    def see_verf(self, v):
        if self.verf is None:
            self.verf = v
            self.verfs_seen.append(v)
        elif v != self.verf:
            self.errors.append("verifier changed from %s to %s without a restart" % (self.verf.hex(), v.hex()))
            self.verf = v

    def on_reply(self, data):
        xid = N.reply_xid(data)
        what = self.inflight.pop(xid, None)
        if what is None:
            self.errors.append("reply with unknown xid %#x" % xid)
            return
        u = N.parse_reply(data, xid)
        st = u.u32()
        N.parse_wcc(u)
        if what[0] == "W":
            i = what[1]
            if st != N.NFS3_OK:
                self.errors.append("WRITE chunk %d: status %d" % (i, st))
                self.todo.appendleft(i)
                return
            count, committed, verf = u.u32(), u.u32(), u.fixed(8)
            self.see_verf(verf)
            self.replied_bytes += count
            if count != MIB:
                self.errors.append("WRITE chunk %d: short count %d" % (i, count))
                self.todo.appendleft(i)
            elif committed == N.FILE_SYNC or committed == N.DATA_SYNC:
                self.durable.add(i)
                self.unstable.pop(i, None)
                self.uncovered.discard(i)
            else:
                if self.stable[i]:
                    self.errors.append("FILE_SYNC WRITE chunk %d answered committed=%d" % (i, committed))
                self.unstable[i] = verf
                self.uncovered.add(i)
            return
        snap = what[1]
        if st != N.NFS3_OK:
            self.errors.append("COMMIT: status %d" % st)
            self.uncovered.update(i for i, _ in snap if i in self.unstable)
            return
        verf = u.fixed(8)
        self.see_verf(verf)
        for i, v in snap:
            if self.unstable.get(i) != v:
                continue  # rewritten meanwhile; a later COMMIT decides
            del self.unstable[i]
            if v == verf:
                self.durable.add(i)
            else:
                # RFC 1813 section 3.3.21: a new verifier means the server
                # may have lost the data; the client must write it again.
                self.resent += 1
                self.todo.appendleft(i)

    def pump(self):
        """Send while the window has room, then handle one reply. False when
        the stream is complete."""
        while len(self.inflight) < WINDOW:
            writes_in_flight = any(w[0] == "W" for w in self.inflight.values())
            if len(self.uncovered) >= COMMIT_EVERY or (self.uncovered and not self.todo and not writes_in_flight):
                self.send_commit()
            elif self.todo:
                self.send_write(self.todo.popleft())
            else:
                break
        if not self.inflight:
            return len(self.durable) < self.n
        self.on_reply(N.recv_record(self.sock))
        return True

    def lost_connection(self):
        """Requeue everything in flight (its fate is unknown)."""
        for what in self.inflight.values():
            if what[0] == "W":
                self.todo.appendleft(what[1])
            else:
                self.uncovered.update(i for i, _ in what[1] if i in self.unstable)
        self.inflight.clear()
        if self.sock:
            self.sock.close()
            self.sock = None
        self.verf = None

    # -- checks --
    def lost_bytes(self):
        """Bytes of acknowledged chunks that differ from the pattern on disk."""
        lost = 0
        with open(self.path, "rb") as f:
            for i in sorted(self.durable):
                f.seek(i * MIB)
                got = f.read(MIB)
                want = pattern(self.seed, i)
                if got != want:
                    lost += sum(1 for a, b in zip(got, want) if a != b) + max(0, MIB - len(got))
        return lost


def main():
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") != 7:
        sys.exit(__doc__)
    port, export, name, size_mib, trials, seed, log = argv[:7]
    port, size_mib, trials, seed = int(port), int(size_mib), int(trials), int(seed)
    server = Server(argv[8:], log, port)
    if not check("snfsd started", server.start()):
        return 1
    s = Stream(port, export, name, size_mib, seed)
    killer = Killer(server, random.Random(seed + 2))
    killer.start()
    krng = random.Random(seed + 3)
    step = size_mib * MIB / (trials + 1)
    kill_at = [int((k + krng.uniform(0.5, 1.5)) * step) for k in range(trials)]
    info("stream of %d MiB (%d FILE_SYNC chunks), %d kills at MiB %s" %
         (size_mib, sum(s.stable), trials, ",".join("%.1f" % (k / MIB) for k in kill_at)))
    t0 = time.monotonic()
    s.connect()
    root = N.Client("127.0.0.1", port).mnt(export)
    c = N.Client("127.0.0.1", port)
    st, fh, _ = c.create(root, name)
    c.close()
    if not check("CREATE %s" % name, st == N.NFS3_OK, "status %d" % st):
        return 1
    s.fh = fh
    trial, lost_total = 0, 0
    while True:
        try:
            # One kill at a time, so that the client sees each of them.
            if kill_at and s.replied_bytes >= kill_at[0] and not killer.busy():
                kill_at.pop(0)
                killer.request()
            if not s.pump():
                if killer.busy():
                    time.sleep(0.05)  # a kill is coming: wait for it
                    continue
                break
        except (OSError, EOFError) as e:
            held = len(s.unstable)
            s.lost_connection()
            while killer.busy() and not killer.restart_failed:
                time.sleep(0.02)
            trial += 1
            if not check("trial %d: snfsd restarted" % trial, not killer.restart_failed):
                return 1
            if killer.kills < trial:
                check("trial %d: connection lost only because of a kill" % trial, False, str(e))
                trial = killer.kills
            if not s.connect():
                check("trial %d: reconnected" % trial, False, "no connection in %ds" % RECONNECT_SECONDS)
                return 1
            lost = s.lost_bytes()
            lost_total += lost
            check("trial %d (%s at %.1f MiB sent, %d uncommitted): %d acknowledged MiB intact on disk, bytes lost %d" %
                  (trial, type(e).__name__, s.sent_bytes / MIB, held, len(s.durable), lost), lost == 0)
    elapsed = time.monotonic() - t0
    killer.quit = True
    killer.poke.release()
    for e in s.errors[:20]:
        info("client error: %s" % e)
    check("no protocol errors", not s.errors, "%d errors" % len(s.errors))
    check_verfs = len(set(s.verfs_seen)) == len(s.verfs_seen)
    check("every restart had a new write verifier (%d instances)" % len(s.verfs_seen), check_verfs)
    # A kill that lands after the last reply goes unnoticed: the final
    # check of the whole file still covers it.
    check("all %d kills done, %d noticed by the client" % (killer.kills, trial), killer.kills == trials)
    check("client carried on to the end: %d/%d chunks acknowledged" % (len(s.durable), size_mib), len(s.durable) == size_mib)
    with open(s.path, "rb") as f:
        whole_ok, size = True, os.fstat(f.fileno()).st_size
        for i in range(size_mib):
            if f.read(MIB) != pattern(s.seed, i):
                whole_ok = False
    check("file on disk equals the pattern (%d bytes)" % size, whole_ok and size == size_mib * MIB)
    rc = server.stop()
    check("snfsd exits 0 on SIGTERM", rc == 0, "status %d" % rc)
    info("trials %d, bytes lost %d, %d chunks re-sent after a verifier change, %.1f MiB/s incl. restarts" %
         (trial, lost_total, s.resent, size_mib / elapsed if elapsed else 0))
    print("# RESULT trials=%d bytes_lost=%d resent=%d seconds=%.1f" % (trial, lost_total, s.resent, elapsed), flush=True)
    return 1 if N.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
