#!/usr/bin/env python3
"""fcntl/flock lock scenarios through the Linux NFS client, run in the
test guest by locks_guest.sh.

usage: locks_guest.py V3DIR V3BDIR V3NDIR V4DIR

The four directories are one directory of the export seen through four
mounts: V3DIR (NFSv3, NLM locking), V3BDIR (NFSv3 again, nosharecache),
V3NDIR (NFSv3 with nolock: the negative control) and V4DIR (NFSv4.2).

POSIX locks belong to a process, so every lock holder is its own process
(a forked worker taking commands over a pipe). Where it matters which
side refused a lock, the two processes use different mounts: the kernel
first checks its local lock table of the inode (nlmclnt_lock and
_nfs4_proc_setlk take a FL_ACCESS lock, F_GETLK asks posix_test_lock),
and each mount without a shared cache has its own inodes, so a conflict
between /mnt3 and /mnt3b or /mnt4 can only be the server's answer.

Prints "R|name rc" (rc 0: as expected) and "G|name: what was seen".
Exits 0 when it ran to the end, whatever the results.
"""
import errno
import fcntl
import multiprocessing
import multiprocessing.connection
import os
import signal
import struct
import subprocess
import sys
import threading
import time

V3, V3B, V3N, V4 = sys.argv[1:5]
CTX = multiprocessing.get_context("fork")
# struct flock on x86_64: short l_type, l_whence; off_t l_start, l_len;
# pid_t l_pid; padded to 32 bytes.
FLOCK_FMT = "hhqqi4x"
KINDS = {"r": fcntl.F_RDLCK, "w": fcntl.F_WRLCK, "u": fcntl.F_UNLCK}
KIND_NAMES = {fcntl.F_RDLCK: "read", fcntl.F_WRLCK: "write", fcntl.F_UNLCK: "none"}
# A lock call on a healthy server answers in well under a second, even in
# the emulated guest; this only bounds a hang.
CALL_TIMEOUT = 20
# A waiter (F_SETLKW) on NFSv3 learns of its grant at its next LOCK retry
# when the server's NLM_GRANTED call back cannot reach the guest: Linux
# retries every 30 s (NLMCLNT_POLL_TIMEOUT), so two periods and slack.
WAIT_TIMEOUT = 75


def serve(conn):
    """The worker: run commands until told to exit. Results are ("ok",
    value) or ("err", errno name)."""
    fds = {}
    while True:
        try:
            cmd = conn.recv()
        except EOFError:
            os._exit(0)
        op, args = cmd[0], cmd[1:]
        try:
            res = None
            if op == "open":  # key path
                fds[args[0]] = os.open(args[1], os.O_RDWR | os.O_CREAT, 0o666)
            elif op == "close":  # key
                os.close(fds.pop(args[0]))
            elif op in ("lock", "lockw"):  # key kind start len
                fl = struct.pack(FLOCK_FMT, KINDS[args[1]], os.SEEK_SET, args[2], args[3], 0)
                fcntl.fcntl(fds[args[0]], fcntl.F_SETLKW if op == "lockw" else fcntl.F_SETLK, fl)
            elif op == "getlk":  # key kind start len -> (type, start, len)
                fl = struct.pack(FLOCK_FMT, KINDS[args[1]], os.SEEK_SET, args[2], args[3], 0)
                t, _, s, n, _ = struct.unpack(FLOCK_FMT, fcntl.fcntl(fds[args[0]], fcntl.F_GETLK, fl))
                res = (KIND_NAMES.get(t, t), s, n)
            elif op == "flock":  # key "ex"|"sh"|"un"
                how = {"ex": fcntl.LOCK_EX, "sh": fcntl.LOCK_SH, "un": fcntl.LOCK_UN}[args[1]]
                fcntl.flock(fds[args[0]], how | fcntl.LOCK_NB)
            elif op == "exit":
                # No unlock, no close: the exit closes the files, and
                # closing must release the process's locks.
                conn.send(("ok", None))
                os._exit(0)
            conn.send(("ok", res))
        except OSError as e:
            conn.send(("err", errno.errorcode.get(e.errno, str(e.errno))))


class Worker:
    """One process holding locks; open(path) then lock, getlk, ..."""

    def __init__(self, name):
        self.name = name
        self.conn, child = CTX.Pipe()
        self.proc = CTX.Process(target=serve, args=(child,), name=name, daemon=True)
        self.proc.start()
        child.close()
        self.busy = False

    def send(self, *cmd):
        self.conn.send(cmd)
        self.busy = True

    def result(self, timeout=CALL_TIMEOUT):
        if not self.conn.poll(timeout):
            return ("timeout", timeout)
        self.busy = False
        try:
            return self.conn.recv()
        except EOFError:
            return ("died", None)

    def call(self, *cmd, timeout=CALL_TIMEOUT):
        if self.busy:
            return ("busy", None)
        self.send(*cmd)
        return self.result(timeout)

    def open(self, path, key="f"):
        return self.call("open", key, path)

    def lock(self, kind, start, length, key="f"):
        return self.call("lock", key, kind, start, length)

    def getlk(self, kind, start, length, key="f"):
        return self.call("getlk", key, kind, start, length)

    def exit(self):
        """Exit without unlocking; wait until the process is gone (its
        files closed, which sends the unlocks)."""
        if not self.busy:
            self.send("exit")
            self.result(10)
        self.proc.join(CALL_TIMEOUT)
        if self.proc.is_alive():
            self.kill()

    def kill(self):
        self.proc.kill()
        self.proc.join(10)


WORKERS = []


def worker(name):
    w = Worker(name)
    WORKERS.append(w)
    return w


def done_all():
    """End every worker still running (a scenario left early)."""
    while WORKERS:
        w = WORKERS.pop()
        if w.proc.is_alive():
            if w.busy:
                w.kill()
            else:
                w.exit()


class Abort(Exception):
    """Leave the scenario: a setup step failed, or a call hung (a hung
    lock manager would otherwise cost CALL_TIMEOUT per remaining step)."""


def result(name, good, seen):
    print(f"G|{name}: {seen}")
    print(f"R|{name} {0 if good else 1}", flush=True)


def hung(r):
    return r[0] in ("timeout", "died", "busy")


GRANTED = ("ok", None)


def refused(r):
    # fcntl(2): F_SETLK on a held range fails with EACCES or EAGAIN;
    # flock(2) LOCK_NB with EWOULDBLOCK (== EAGAIN).
    return r[0] == "err" and r[1] in ("EAGAIN", "EACCES")


def expect_granted(name, r):
    result(name, r == GRANTED, f"got {r}")
    if hung(r):
        raise Abort(name)


def expect_refused(name, r):
    result(name, refused(r), f"got {r}")
    if hung(r):
        raise Abort(name)


def expect_holder(name, r, kind, start, length):
    """F_GETLK found a conflicting lock of kind over [start, start+length)."""
    result(name, r == ("ok", (kind, start, length)), f"got {r}, want a {kind} lock {start}+{length}")
    if hung(r):
        raise Abort(name)


def path(mount, fname):
    return os.path.join(mount, fname)


def must(name, r):
    """A setup step of a scenario (open, a lock the scenario builds on);
    reported only when it fails."""
    if r != GRANTED:
        result(name, False, f"setup step failed: {r}")
        raise Abort(name)


# ---- the scenarios ------------------------------------------------------


def controls():
    """The checks can fail: a lock nobody holds is granted, POSIX lets one
    process lock over its own lock, and a nolock mount does not see a lock
    held on the server (so /mnt3b's refusals below are the server's)."""
    b2 = worker("ctl-b2")
    must("ctl-open", b2.open(path(V3B, "ctl")))
    r = b2.lock("w", 50, 100)
    result("ctl-free-range-granted", r == GRANTED and not refused(r), f"got {r}")
    must("ctl-unlock", b2.lock("u", 0, 0))
    a = worker("ctl-a")
    must("ctl-open-a", a.open(path(V3, "ctl")))
    must("ctl-a-lock", a.lock("w", 0, 100))
    r = a.lock("w", 50, 100)  # same process, overlapping: not a conflict
    result("ctl-same-owner-not-refused", r == GRANTED and not refused(r), f"got {r}")
    r = a.getlk("w", 0, 200)  # and F_GETLK ignores the caller's own locks
    result("ctl-same-owner-getlk-none", r == ("ok", ("none", 0, 200)), f"got {r}")
    n = worker("ctl-n")
    must("ctl-open-n", n.open(path(V3N, "ctl")))
    r = n.lock("w", 0, 100)
    result("ctl-nolock-mount-blind-to-server-lock", r == GRANTED, f"got {r}")
    # and the lock-enabled mounts do see it
    expect_refused("ctl-v3b-sees-it", b2.lock("w", 0, 100))
    done_all()


def s1_v3_v3():
    """Two NFSv3 processes: write lock, conflict, F_GETLK, no overlap."""
    a, b, b2 = worker("s1-a"), worker("s1-b"), worker("s1-b2")
    must("s1-open-a", a.open(path(V3, "s1")))
    must("s1-open-b", b.open(path(V3, "s1")))
    must("s1-open-b2", b2.open(path(V3B, "s1")))
    expect_granted("v3-a-write-0-99", a.lock("w", 0, 100))
    expect_refused("v3-b-write-50-149-refused-same-mount", b.lock("w", 50, 100))
    expect_refused("v3-b-write-50-149-refused-other-mount", b2.lock("w", 50, 100))
    expect_refused("v3-b-read-0-49-refused-other-mount", b2.lock("r", 0, 50))
    expect_holder("v3-b-getlk-same-mount", b.getlk("w", 50, 100), "write", 0, 100)
    expect_holder("v3-b-getlk-other-mount-nlm-test", b2.getlk("w", 50, 100), "write", 0, 100)
    expect_granted("v3-b-write-100-199-no-overlap", b2.lock("w", 100, 100))
    must("s1-a-unlock", a.lock("u", 0, 100))
    expect_granted("v3-b-write-50-99-after-unlock", b2.lock("w", 50, 50))
    # b2 now holds 50-199: a's write on 0-49 fits beside it, 0-50 does not
    expect_granted("v3-a-write-0-49-beside", a.lock("w", 0, 50))
    expect_refused("v3-a-write-0-50-refused", a.lock("w", 0, 51))
    done_all()


def s2_cross():
    """NFSv3 (NLM) and NFSv4.2 holders of the same bytes exclude each
    other, both ways, and F_GETLK sees across."""
    a, b, c = worker("s2-a"), worker("s2-b"), worker("s2-c")
    must("s2-open-a", a.open(path(V3, "s2")))
    must("s2-open-b", b.open(path(V3, "s2")))
    must("s2-open-c", c.open(path(V4, "s2")))
    must("s2-a-lock", a.lock("w", 0, 100))
    expect_refused("x-v4-write-refused-while-v3-holds", c.lock("w", 0, 100))
    expect_refused("x-v4-read-refused-while-v3-writes", c.lock("r", 99, 1))
    expect_holder("x-v4-getlk-sees-v3-lock", c.getlk("w", 0, 100), "write", 0, 100)
    must("s2-a-unlock", a.lock("u", 0, 100))
    expect_granted("x-v4-write-granted-after-v3-unlock", c.lock("w", 0, 100))
    # b is on /mnt3 like a, but a holds nothing now: the server decides
    expect_refused("x-v3-write-refused-while-v4-holds", b.lock("w", 0, 100))
    expect_refused("x-v3-read-refused-while-v4-writes", b.lock("r", 50, 10))
    expect_holder("x-v3-getlk-sees-v4-lock", b.getlk("w", 0, 100), "write", 0, 100)
    expect_granted("x-v3-write-100-199-beside-v4", b.lock("w", 100, 100))
    must("s2-c-unlock", c.lock("u", 0, 100))
    expect_granted("x-v3-write-granted-after-v4-unlock", b.lock("w", 0, 100))
    done_all()


def s3_readers():
    """Read locks are shared across protocols; a writer waits for all."""
    a, c, e, f = worker("s3-a"), worker("s3-c"), worker("s3-e"), worker("s3-f")
    must("s3-open-a", a.open(path(V3, "s3")))
    must("s3-open-c", c.open(path(V4, "s3")))
    must("s3-open-e", e.open(path(V3B, "s3")))
    must("s3-open-f", f.open(path(V4, "s3")))
    expect_granted("rd-v3-read", a.lock("r", 0, 100))
    expect_granted("rd-v4-read-shared-with-v3", c.lock("r", 0, 100))
    expect_refused("rd-v3-writer-refused-by-both", e.lock("w", 0, 100))
    expect_refused("rd-v4-writer-refused-by-both", f.lock("w", 0, 100))
    must("s3-a-unlock", a.lock("u", 0, 100))
    expect_refused("rd-v3-writer-refused-by-v4-reader", e.lock("w", 50, 100))
    must("s3-a-relock", a.lock("r", 0, 100))
    must("s3-c-unlock", c.lock("u", 0, 100))
    expect_refused("rd-v4-writer-refused-by-v3-reader", f.lock("w", 0, 1))
    expect_granted("rd-v4-reader-beside-v3-reader", f.lock("r", 0, 1))
    must("s3-a-unlock2", a.lock("u", 0, 100))
    must("s3-f-unlock", f.lock("u", 0, 100))
    expect_granted("rd-writer-granted-after-readers", e.lock("w", 0, 100))
    done_all()


def s4_blocking():
    """F_SETLKW waiters get the bytes once the holders let go. Several
    waits run at once (each NFSv3 one costs up to 30 s of Linux's retry
    period), each on its own file:
      a: v3 waiter (other mount) behind a v3 holder
      b: v3 waiter behind a v4 holder (granted when the v4 lock goes)
      c: v4 waiter behind a v3 holder (woken by CB_NOTIFY_LOCK: OPEN
         said MAY_NOTIFY_LOCK, so the client waits for it, up to 30 s)
      d: v3 waiter on the holder's own mount
      e: v4 waiter behind a v3 holder that lets go 10 s later than the
         others: polling, Linux would ask again at 12.7 s and 25.5 s
         after it began (0.1 s doubling); CB_NOTIFY_LOCK wakes it at once
      k: v3 waiter killed while it waits: the server must not hand the
         lock to it afterwards (the client CANCELs)."""
    h3, h4 = worker("s4-h3"), worker("s4-h4")
    for key in "acdek":
        must(f"s4-open-h3-{key}", h3.open(path(V3, "s4" + key), key))
        must(f"s4-h3-lock-{key}", h3.lock("w", 0, 100, key))
    must("s4-open-h4", h4.open(path(V4, "s4b"), "b"))
    must("s4-h4-lock-b", h4.lock("w", 0, 100, "b"))
    waiters = {"a": (worker("s4-da"), V3B), "b": (worker("s4-db"), V3),
               "c": (worker("s4-dc"), V4), "d": (worker("s4-dd"), V3),
               "e": (worker("s4-de"), V4), "k": (worker("s4-dk"), V3B)}
    for key, (w, mnt) in waiters.items():
        must(f"s4-open-d{key}", w.open(path(mnt, "s4" + key), key))
    for key, (w, mnt) in waiters.items():
        w.send("lockw", key, "w", 0, 100)
    time.sleep(2)
    # Nobody may have the bytes yet.
    for key, (w, mnt) in waiters.items():
        r = w.result(0)
        result(f"blk-{key}-still-waiting", r[0] == "timeout", f"got {r}")
    # Kill k's waiter and give its CANCEL a moment to reach the server.
    dk = waiters.pop("k")[0]
    dk.kill()
    time.sleep(1)
    t_release = time.monotonic()
    for key in "acdk":
        must(f"s4-h3-unlock-{key}", h3.lock("u", 0, 100, key))
    must("s4-h4-unlock-b", h4.lock("u", 0, 100, "b"))
    # e's holder lets go 10 s later, from a timer: the main thread does
    # not use h3 again.
    released = {}

    def release_e():
        released["e"] = time.monotonic()
        h3.lock("u", 0, 100, "e")
    timer = threading.Timer(10, release_e)
    timer.start()
    # The killed waiter must not end up holding the lock. Its CANCEL
    # goes out asynchronously; a late one still releases the grant, so
    # allow a few seconds, and say how long it took.
    p = worker("s4-p")
    must("s4-open-p", p.open(path(V3B, "s4k")))
    while True:
        r = p.lock("w", 0, 100)
        waited = time.monotonic() - t_release
        if r == GRANTED or not refused(r) or waited > 10:
            break
        time.sleep(0.5)
    result("blk-k-killed-waiter-holds-nothing", r == GRANTED, f"got {r} {waited:.1f}s after the release")
    # The server hands freed bytes to the oldest waiting LOCK at once,
    # before the waiter hears of it (at its next retry): a newcomer is
    # refused meanwhile. Only for waiters whose LOCK reached the server
    # long before the release (d's waited in its own kernel first). A
    # newcomer that did get the bytes lets them go again.
    for key, mnt in (("a", V4), ("b", V3B)):
        q = worker(f"s4-new-{key}")
        must(f"s4-open-new-{key}", q.open(path(mnt, "s4" + key)))
        r = q.lock("w", 0, 100)
        result(f"blk-{key}-granted-to-waiter-at-release", refused(r),
               f"a newcomer got {r} {time.monotonic() - t_release:.1f}s after the release")
        if r == GRANTED:
            q.lock("u", 0, 100)
    # Collect the grants as they come (each waiter's own time).
    took, pending = {}, {w.conn: key for key, (w, mnt) in waiters.items()}
    while pending:
        left = WAIT_TIMEOUT - (time.monotonic() - t_release)
        ready = multiprocessing.connection.wait(list(pending), max(0.0, left))
        if not ready:
            break
        for conn in ready:
            key = pending.pop(conn)
            took[key] = time.monotonic() - released.get(key, t_release)
    timer.join()
    for key, (w, mnt) in waiters.items():
        r = w.result(0)
        seen = f"{took[key]:.1f}s after the release" if key in took else f"not within {WAIT_TIMEOUT}s"
        result(f"blk-{key}-acquired", r == GRANTED, f"got {r} {seen}")
    print("G|blocking waits, seconds from release to grant: "
          + " ".join(f"{k}={took[k]:.1f}" if k in took else f"{k}=none" for k in waiters), flush=True)
    # A granted waiter really holds the bytes (on the server: other mount).
    q = worker("s4-q")
    must("s4-open-q", q.open(path(V4, "s4a")))
    expect_refused("blk-a-waiter-holds-after-grant", q.lock("w", 0, 100))
    done_all()


def s5_release_on_exit():
    """A process that ends (or closes any descriptor of the file) without
    unlocking loses its locks at once."""
    a, b2 = worker("s5-a"), worker("s5-b2")
    must("s5-open-a", a.open(path(V3, "s5")))
    must("s5-open-b2", b2.open(path(V3B, "s5")))
    must("s5-a-lock", a.lock("w", 0, 100))
    expect_refused("exit-v3-held-before-exit", b2.lock("w", 0, 100))
    a.exit()
    expect_granted("exit-v3-holder-exit-releases", b2.lock("w", 0, 100))
    must("s5-b2-unlock", b2.lock("u", 0, 100))

    c = worker("s5-c")
    must("s5-open-c", c.open(path(V4, "s5")))
    must("s5-c-lock", c.lock("w", 0, 100))
    expect_refused("exit-v4-held-before-exit", b2.lock("w", 0, 100))
    c.exit()
    expect_granted("exit-v4-holder-exit-releases-for-v3", b2.lock("w", 0, 100))
    must("s5-b2-unlock2", b2.lock("u", 0, 100))

    # POSIX: closing any descriptor of the file drops the process's locks.
    e = worker("s5-e")
    must("s5-open-e1", e.open(path(V3, "s5"), "one"))
    must("s5-open-e2", e.open(path(V3, "s5"), "two"))
    must("s5-e-lock", e.lock("w", 0, 100, "one"))
    expect_refused("close-v3-held-before-close", b2.lock("w", 0, 100))
    must("s5-e-close", e.call("close", "two"))
    expect_granted("close-other-fd-releases", b2.lock("w", 0, 100))
    done_all()


def s6_flock():
    """flock(2) on NFS (local_lock=none) becomes a whole-file lock on the
    server: two processes' LOCK_EX conflict, also with fcntl locks and
    across protocols."""
    a, b, b2, c = worker("s6-a"), worker("s6-b"), worker("s6-b2"), worker("s6-c")
    must("s6-open-a", a.open(path(V3, "s6")))
    must("s6-open-b", b.open(path(V3, "s6")))
    must("s6-open-b2", b2.open(path(V3B, "s6")))
    must("s6-open-c", c.open(path(V4, "s6")))
    expect_granted("flock-v3-a-ex", a.call("flock", "f", "ex"))
    expect_refused("flock-v3-b-ex-refused-same-mount", b.call("flock", "f", "ex"))
    expect_refused("flock-v3-b-ex-refused-other-mount", b2.call("flock", "f", "ex"))
    expect_refused("flock-v4-ex-refused-by-v3-flock", c.call("flock", "f", "ex"))
    expect_refused("flock-v3-blocks-fcntl-lock", b2.lock("w", 1000, 1))
    expect_granted("flock-v3-a-unlock", a.call("flock", "f", "un"))
    expect_granted("flock-v3-b-ex-after-unlock", b2.call("flock", "f", "ex"))
    expect_refused("flock-v4-ex-refused-by-v3b-flock", c.call("flock", "f", "ex"))
    done_all()


def s7_ranges():
    """Range arithmetic on the server across protocols: a v3 write lock
    downgraded to read and upgraded again, split by a partial unlock, and
    a lock to the end of the file (l_len 0) at a 64-bit offset."""
    a, b2, c = worker("s7-a"), worker("s7-b2"), worker("s7-c")
    must("s7-open-a", a.open(path(V3, "s7")))
    must("s7-open-b2", b2.open(path(V3B, "s7")))
    must("s7-open-c", c.open(path(V4, "s7")))
    must("s7-a-lock", a.lock("w", 0, 100))
    expect_refused("rng-v4-read-refused-by-v3-write", c.lock("r", 0, 100))
    expect_granted("rng-v3-downgrade-to-read", a.lock("r", 0, 100))
    expect_granted("rng-v4-read-granted-after-v3-downgrade", c.lock("r", 0, 100))
    expect_refused("rng-v3-upgrade-refused-by-v4-reader", a.lock("w", 0, 100))
    must("s7-c-unlock", c.lock("u", 0, 0))
    expect_granted("rng-v3-upgrade-granted-after-v4-unlock", a.lock("w", 0, 100))
    must("s7-a-split", a.lock("u", 40, 20))  # a keeps 0-39 and 60-99
    expect_granted("rng-v4-write-in-the-hole-of-v3-lock", c.lock("w", 40, 20))
    expect_refused("rng-v4-write-byte-39-refused", c.lock("w", 39, 1))
    expect_refused("rng-v4-write-byte-60-refused", c.lock("w", 60, 1))
    expect_refused("rng-v3-write-byte-50-refused-by-v4", b2.lock("w", 50, 1))
    must("s7-c-unlock2", c.lock("u", 0, 0))
    must("s7-a-unlock", a.lock("u", 0, 0))
    big = 1 << 40
    must("s7-a-lock-to-eof", a.lock("w", big, 0))
    expect_refused("rng-v4-write-refused-far-past-v3-lock-to-eof", c.lock("w", 1 << 50, 1))
    expect_granted("rng-v4-write-just-below-v3-lock-to-eof", c.lock("w", big - 1, 1))
    expect_holder("rng-v3-getlk-reports-lock-to-eof", b2.getlk("w", 1 << 62, 1), "write", big, 0)
    expect_holder("rng-v4-getlk-reports-lock-to-eof", c.getlk("r", 1 << 62, 1), "write", big, 0)
    done_all()


def s8_sm_notify():
    """A client that restarts says so with SM_NOTIFY (sm-notify at boot,
    forced here with -f): snfsd drops the locks it held. The holder process
    still runs, as if from before the "restart"; another mount must get
    its bytes. Last: sm-notify moves statd's monitor list aside."""
    a, b2 = worker("s8-a"), worker("s8-b2")
    must("s8-open-a", a.open(path(V3, "s8")))
    must("s8-open-b2", b2.open(path(V3B, "s8")))
    must("s8-a-lock", a.lock("w", 0, 100))
    expect_refused("nsm-held-before-notify", b2.lock("w", 0, 100))
    try:
        out = subprocess.run(["sm-notify", "-f", "-d"], capture_output=True, text=True,
                             timeout=60)
        for line in (out.stdout + out.stderr).splitlines():
            print(f"G|sm-notify: {line}", flush=True)
        result("nsm-sm-notify-ran", out.returncode == 0, f"exit {out.returncode}")
    except (OSError, subprocess.TimeoutExpired) as e:
        result("nsm-sm-notify-ran", False, repr(e))
    r = b2.lock("w", 0, 100)
    for _ in range(50):  # the notification is on its way: a few seconds at most
        if not refused(r):
            break
        time.sleep(0.2)
        r = b2.lock("w", 0, 100)
    expect_granted("nsm-restarted-client-locks-dropped", r)
    done_all()


def main():
    for s in (controls, s1_v3_v3, s2_cross, s3_readers, s4_blocking, s5_release_on_exit, s6_flock,
              s7_ranges, s8_sm_notify):
        t0 = time.monotonic()
        try:
            s()
        except Abort:
            pass  # reported where it happened
        except Exception as e:  # a bug here must not hide the others
            result(f"{s.__name__}-crashed", False, repr(e))
        finally:
            done_all()
        print(f"G|{s.__name__} took {time.monotonic() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
