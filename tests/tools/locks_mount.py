#!/usr/bin/env python3
"""fcntl(2) locks through two snfs-mount mounts of one export (two NFSv4
clients of the server): usage: locks_mount.py NAME DIR1 DIR2 [full].
Prints "ok - ..." / "not ok - ..." per check. Without "full" only the
conflicts, F_GETLK and shared read locks run (for a peer server)."""
import errno
import fcntl
import os
import signal
import struct
import sys
import threading
import time

NAME, D1, D2 = sys.argv[1], sys.argv[2], sys.argv[3]
FULL = len(sys.argv) > 4 and sys.argv[4] == "full"
FAILS = 0


def result(what, good, detail=""):
    global FAILS
    if good:
        print(f"ok - {NAME}: {what}", flush=True)
    else:
        FAILS += 1
        print(f"not ok - {NAME}: {what} {detail}", flush=True)


def try_lock(f, kind, length, start, wait=False):
    """0 when granted, else the errno."""
    try:
        nb = 0 if wait or kind == fcntl.LOCK_UN else fcntl.LOCK_NB
        fcntl.lockf(f, kind | nb, length, start)
        return 0
    except OSError as e:
        return e.errno


def getlk(f, kind, start, length):
    fl = struct.pack("hhqqi", kind, os.SEEK_SET, start, length, 0)
    t, _, s, n, _ = struct.unpack("hhqqi", fcntl.fcntl(f, fcntl.F_GETLK, fl))
    return t, s, n


REFUSED = (errno.EAGAIN, errno.EACCES)
EX, SH, UN = fcntl.LOCK_EX, fcntl.LOCK_SH, fcntl.LOCK_UN

with open(os.path.join(D1, "lk"), "w") as f:
    f.write("x" * 4096)
a = open(os.path.join(D1, "lk"), "r+")
b = open(os.path.join(D2, "lk"), "r+")

result("write lock 0-99 on the first mount", try_lock(a, EX, 100, 0) == 0)
r = try_lock(b, EX, 10, 50)
result("the other mount's write 50-59 refused (by the server)", r in REFUSED, r)
r = try_lock(b, SH, 1, 99)
result("... and its read of byte 99", r in REFUSED, r)
t, s, n = getlk(b, fcntl.F_WRLCK, 0, 0)
result("F_GETLK on the other mount reports a write lock 0-99 (LOCKT)",
       (t, s, n) == (fcntl.F_WRLCK, 0, 100), (t, s, n))
t, s, n = getlk(b, fcntl.F_WRLCK, 100, 10)
result("F_GETLK beside it: F_UNLCK", t == fcntl.F_UNLCK, (t, s, n))
result("a write lock beside it (100-109) granted", try_lock(b, EX, 10, 100) == 0)
result("unlock", try_lock(a, UN, 100, 0) == 0 and try_lock(b, UN, 10, 100) == 0)
r = try_lock(b, EX, 10, 50)
result("the other mount's write 50-59 granted after the unlock", r == 0, r)
try_lock(b, UN, 0, 0)
result("read locks shared across the mounts",
       try_lock(a, SH, 100, 0) == 0 and try_lock(b, SH, 100, 0) == 0)
r = try_lock(a, EX, 100, 0)
result("upgrade to write refused while the other mount reads", r in REFUSED, r)
try_lock(b, UN, 0, 0)
r = try_lock(a, EX, 100, 0)
result("upgrade granted once it let go", r == 0, r)
try_lock(a, UN, 0, 0)

if FULL:
    # POSIX: a process's own locks, whichever descriptor.
    fcntl.lockf(a, EX, 100, 0)
    t, s, n = getlk(a, fcntl.F_WRLCK, 0, 100)
    result("F_GETLK by the holder ignores its own lock", t == fcntl.F_UNLCK,
           (t, s, n))
    a2 = open(os.path.join(D1, "lk"), "r+")
    r = try_lock(a2, EX, 10, 50)
    result("the holder locks again through another descriptor", r == 0, r)
    try_lock(a2, UN, 100, 0)
    r = try_lock(b, EX, 100, 0)
    result("... and its unlock there frees the bytes for the other mount",
           r == 0, r)
    try_lock(b, UN, 0, 0)
    a2.close()

    # Locks to the end of the file, far out.
    result("write lock from 2^40 to the end", try_lock(a, EX, 0, 1 << 40) == 0)
    r = try_lock(b, EX, 1, 1 << 50)
    result("... refuses a write at 2^50", r in REFUSED, r)
    result("... not one on byte 2^40-1", try_lock(b, EX, 1, (1 << 40) - 1) == 0)
    t, s, n = getlk(b, fcntl.F_WRLCK, 1 << 45, 1)
    result("F_GETLK reports it as 2^40, l_len 0",
           (t, s, n) == (fcntl.F_WRLCK, 1 << 40, 0), (t, s, n))
    try_lock(a, UN, 0, 0)
    try_lock(b, UN, 0, 0)

    # Dropped at close (any descriptor of the file) and at exit.
    def held_by_child(action):
        """The other mount's try before and after a child process that
        locked 0-99 exits or closes another descriptor of the file."""
        to_parent, to_child = os.pipe(), os.pipe()
        pid = os.fork()
        if pid == 0:
            c = open(os.path.join(D1, "lk"), "r+")
            c2 = open(os.path.join(D1, "lk"), "r")
            fcntl.lockf(c, EX, 100, 0)
            os.write(to_parent[1], b"L")
            os.read(to_child[0], 1)
            if action == "close-other":
                c2.close()
                os.write(to_parent[1], b"C")
                time.sleep(30)
            os._exit(0)
        os.read(to_parent[0], 1)
        before = try_lock(b, EX, 100, 0)
        os.write(to_child[1], b"g")
        if action == "close-other":
            os.read(to_parent[0], 1)
        else:
            os.waitpid(pid, 0)
        after = try_lock(b, EX, 100, 0)
        try_lock(b, UN, 0, 0)
        if action == "close-other":
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        for fd in to_parent + to_child:
            os.close(fd)
        return before, after

    before, after = held_by_child("exit")
    result("a process's lock refuses the other mount", before in REFUSED, before)
    result("... and goes when the process exits", after == 0, after)
    before, after = held_by_child("close-other")
    result("closing another descriptor of the file drops it (POSIX)",
           before in REFUSED and after == 0, (before, after))

    # F_SETLKW waits for the release, not less.
    fcntl.lockf(a, EX, 100, 0)
    released = []

    def release():
        time.sleep(1.0)
        released.append(time.monotonic())
        fcntl.lockf(a, UN, 100, 0)
    th = threading.Thread(target=release)
    th.start()
    r = try_lock(b, EX, 100, 0, wait=True)
    got = time.monotonic()
    th.join()
    result("F_SETLKW on the other mount is granted after the release, "
           "not before", r == 0 and released and got >= released[0],
           (r, released, got))
    try_lock(b, UN, 0, 0)

    # A waiter interrupted by a signal whose handler raises (Python
    # retries a call a signal interrupted otherwise, PEP 475) gets out of
    # F_SETLKW, and holds nothing.
    class Interrupted(Exception):
        pass

    def interrupt(*_):
        raise Interrupted()
    fcntl.lockf(a, EX, 100, 0)
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGALRM, interrupt)
        signal.alarm(1)
        try:
            r = try_lock(b, EX, 100, 0, wait=True)
        except Interrupted:
            r = errno.EINTR
        os._exit(100 + (r if r < 100 else 99))
    _, status = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(status) - 100
    result("an F_SETLKW waiter interrupted by a signal: EINTR",
           code == errno.EINTR, code)
    fcntl.lockf(a, UN, 100, 0)
    r = try_lock(b, EX, 100, 0)
    result("... and it holds nothing afterwards", r == 0, r)
    try_lock(b, UN, 0, 0)

a.close()
b.close()
sys.exit(1 if FAILS else 0)
