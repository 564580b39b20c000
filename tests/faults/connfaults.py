#!/usr/bin/env python3
"""Client side of t_conn_faults.sh (issue 7, "Faults"), one case per run:

  connfaults.py cuts PORT EXPORT PID       connections cut mid-request and
                                           mid-reply
  connfaults.py noreader PORT EXPORT PID   a client that never reads its
                                           replies; RSS bounded, others served
  connfaults.py nospc PORT EXPORT PID      FILE_SYNC writes until NOSPC on a
                                           small file system
  connfaults.py eio PORT EXPORT PID        the export's file system shut down
                                           under the server (EIO)

EXPORT is the exported directory (the MNT path, also read locally to check
what reached the disk). PID is snfsd's, for /proc/PID/status. Prints ok/not
ok lines; exits 1 if a check failed.
"""

import fcntl
import os
import random
import select
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import nfsrpc as N  # noqa: E402
from nfsrpc import check, info, rss_kib  # noqa: E402

MIB = 1 << 20
NFS3ERR_NOSPC, NFS3ERR_ROFS, NFS3ERR_SERVERFAULT = 28, 30, 10006


def alive(port, pid):
    """The process exists and answers a NULL on a new connection."""
    if rss_kib(pid) < 0:
        return False
    try:
        with N.Client("127.0.0.1", port, timeout=10) as c:
            c.null()
        return True
    except (OSError, EOFError, N.RpcError, N.XdrError):
        return False


def raw_call(xid, proc, args):
    return N.record_mark(N.build_call(xid, N.NFS_PROG, 3, proc, args))


def setup_file(port, export, name, size):
    c = N.Client("127.0.0.1", port)
    root = c.mnt(export)
    st, fh, _ = c.create(root, name)
    if st != N.NFS3_OK:
        raise SystemExit("not ok - CREATE %s: status %d" % (name, st))
    data = random.Random(name).randbytes(size)
    for off in range(0, size, MIB):
        st, n, _, _ = c.write(fh, off, data[off:off + MIB], N.FILE_SYNC)
        if st != N.NFS3_OK:
            raise SystemExit("not ok - WRITE %s: status %d" % (name, st))
    return c, root, fh, data


# ---- connections cut mid-request and mid-reply ----

def cuts(port, export, pid):
    c, root, fh, data = setup_file(port, export, "cut.dat", MIB)
    rounds = int(os.environ.get("CUT_ROUNDS", "100"))
    base = rss_kib(pid)
    wargs = N.Packer().opaque(fh).u64(0).u32(MIB).u32(N.UNSTABLE).opaque(data).bytes()
    write_rec = raw_call(7, N.NFSPROC3_WRITE, wargs)
    read_rec = raw_call(9, N.NFSPROC3_READ, N.Packer().opaque(fh).u64(0).u32(MIB).bytes())
    cases = {
        # the record mark promises 1 MiB and more; half of it comes
        "half a WRITE record, then close": lambda s: s.sendall(write_rec[:len(write_rec) // 2]),
        # a header alone, not even a whole record mark
        "2 bytes of a record mark, then close": lambda s: s.sendall(write_rec[:2]),
        # the whole call; the reply is never read
        "full 1 MiB WRITE, close before the reply": lambda s: s.sendall(write_rec),
        # the reply is being sent when the peer goes away
        "1 MiB READ, close after 100 reply bytes": lambda s: (s.sendall(read_rec), N.recv_exact(s, 100)),
        # RST instead of FIN (SO_LINGER 0) while the reply is on its way
        "1 MiB READ, reset after 100 reply bytes": lambda s: (
            s.sendall(read_rec), N.recv_exact(s, 100),
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))),
    }
    for name, act in cases.items():
        errs = 0
        for _ in range(rounds):
            try:
                s = socket.create_connection(("127.0.0.1", port), 5)
                s.settimeout(10)
                act(s)
                s.close()
            except (OSError, EOFError) as e:
                errs += 1
                last = e
        check("%d x %s" % (rounds, name), errs == 0, "%d errors, last %s" % (errs, errs and last))
        check("snfsd answers after: %s" % name, alive(port, pid))
    # The old connection still works, and the data is what was written.
    st, got, _ = c.read(fh, 0, MIB)
    check("READ on the first connection after all the cuts", st == N.NFS3_OK and got == data,
          "status %d" % st)
    time.sleep(0.5)
    grow = (rss_kib(pid) - base) // 1024
    info("RSS %d MiB before the cuts, %d MiB after" % (base // 1024, rss_kib(pid) // 1024))
    # Each cut WRITE left a 1 MiB record buffer behind: a leak of those
    # would be hundreds of MiB. Tens of MiB is malloc keeping freed memory
    # in its per-thread arenas (it levels off around 80 MiB here).
    check("RSS grew by %d MiB over %d cut connections (bound 128)" % (grow, rounds * len(cases)), grow < 128)


# ---- a client that never reads its replies ----

def noreader(port, export, pid):
    c, root, fh, data = setup_file(port, export, "big.dat", MIB)
    want = int(os.environ.get("NOREADER_CALLS", "5000"))
    bound = int(os.environ.get("NOREADER_RSS_MIB", "128"))
    base = rss_kib(pid)
    s = socket.create_connection(("127.0.0.1", port), 5)
    s.setblocking(False)
    sent, buf, deadline = 0, b"", time.monotonic() + 5
    while sent < want and time.monotonic() < deadline:
        if not buf:
            buf = raw_call(0x1000 + sent, N.NFSPROC3_READ, N.Packer().opaque(fh).u64(0).u32(MIB).bytes())
        try:
            k = s.send(buf)
        except BlockingIOError:
            select.select([], [s], [], 0.1)
            continue
        buf = buf[k:]
        if not buf:
            sent += 1
    info("non-reader pipelined %d READs of 1 MiB (%d asked) and reads nothing" % (sent, want))
    # Meanwhile other clients are served, and the server's memory stays
    # bounded: it must stop reading from a peer whose replies pile up.
    peak, slow, errs, ops = base, 0.0, 0, 0
    t_end = time.monotonic() + float(os.environ.get("NOREADER_SECONDS", "4"))
    other = N.Client("127.0.0.1", port, timeout=10)
    while time.monotonic() < t_end:
        t0 = time.monotonic()
        try:
            other.null()
            st, _ = other.getattr(fh)
            st2, got, _ = other.read(fh, 0, MIB)
            if st != N.NFS3_OK or st2 != N.NFS3_OK or got != data:
                errs += 1
        except (OSError, EOFError, N.RpcError, N.XdrError):
            errs += 1
            other = N.Client("127.0.0.1", port, timeout=10)
        slow = max(slow, time.monotonic() - t0)
        ops += 3
        peak = max(peak, rss_kib(pid))
    check("other client served while the non-reader sleeps: %d ops, slowest round %.2fs" % (ops, slow),
          errs == 0 and slow < 5, "%d errors" % errs)
    grow = (peak - base) // 1024
    info("RSS %d MiB before, peak %d MiB with the non-reader" % (base // 1024, peak // 1024))
    check("RSS growth with the non-reader %d MiB (bound %d)" % (grow, bound), grow < bound)
    s.close()
    time.sleep(0.5)
    check("snfsd answers after the non-reader is gone", alive(port, pid))


# ---- full disk ----

def nospc(port, export, pid):
    c = N.Client("127.0.0.1", port)
    root = c.mnt(export)
    st, fh, _ = c.create(root, "fill.dat")
    if not check("CREATE fill.dat", st == N.NFS3_OK, "status %d" % st):
        return
    chunk = 256 << 10
    acked, off, last = [], 0, None
    rng = random.Random(5)
    while off < 1 << 30:
        data = rng.randbytes(chunk)
        st, n, committed, _ = c.write(fh, off, data, N.FILE_SYNC)
        if st != N.NFS3_OK:
            last = st
            break
        if n != len(data) or committed != N.FILE_SYNC:
            check("WRITE FILE_SYNC at %d answered count %d committed %d" % (off, n, committed), False)
            break
        acked.append((off, data))
        off += chunk
    info("%d KiB acknowledged FILE_SYNC before status %s" % (off >> 10, last))
    check("NFS3ERR_NOSPC (28) once the disk is full", last == NFS3ERR_NOSPC, "status %s" % last)
    check("snfsd answers at NOSPC", alive(port, pid))
    # More writes and a COMMIT still answer cleanly; nothing acknowledged is lost.
    st, *_ = c.write(fh, off, b"x" * chunk, N.UNSTABLE)
    st2, _ = c.commit(fh)
    info("after NOSPC: UNSTABLE WRITE status %d, COMMIT status %d" % (st, st2))
    check("a second WRITE at NOSPC gets an answer (status %d)" % st, st in (N.NFS3_OK, NFS3ERR_NOSPC))
    bad_nfs = bad_disk = 0
    with open(os.path.join(export, "fill.dat"), "rb") as f:
        for o, d in acked:
            st, got, _ = c.read(fh, o, len(d))
            if st != N.NFS3_OK or got != d:
                bad_nfs += 1
            f.seek(o)
            if f.read(len(d)) != d:
                bad_disk += 1
    check("all %d acknowledged chunks read back intact over NFS" % len(acked), bad_nfs == 0, "%d bad" % bad_nfs)
    check("all %d acknowledged chunks intact on disk" % len(acked), bad_disk == 0, "%d bad" % bad_disk)
    # Freeing space makes writes work again.
    check("REMOVE fill.dat", c.remove(root, "fill.dat") == N.NFS3_OK)
    st, fh2, _ = c.create(root, "after.dat")
    ok_after = st == N.NFS3_OK and c.write(fh2, 0, b"y" * chunk, N.FILE_SYNC)[0] == N.NFS3_OK
    check("WRITE succeeds again after space is freed", ok_after)


# ---- EIO from the backend ----

EXT4_IOC_SHUTDOWN = 0x8004587D      # _IOR('X', 125, __u32), also XFS_IOC_GOINGDOWN
EXT4_GOING_FLAGS_NOLOGFLUSH = 2


def eio(port, export, pid):
    c, root, fh, data = setup_file(port, export, "eio.dat", MIB)
    st, dfh = c.mkdir(root, "d")
    check("MKDIR d before the shutdown", st == N.NFS3_OK, "status %d" % st)
    # The file system goes away under the server, as a failing disk does:
    # from now on ext4 answers EIO to reads, writes and lookups.
    fd = os.open(export, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, struct.pack("I", EXT4_GOING_FLAGS_NOLOGFLUSH))
    except OSError as e:
        check("shut the export's file system down (EXT4_IOC_SHUTDOWN)", False, str(e))
        return
    finally:
        os.close(fd)
    ok("file system shut down under snfsd")
    results = {}
    calls = {
        "READ": lambda: c.read(fh, 0, 65536)[0],
        "WRITE FILE_SYNC": lambda: c.write(fh, 0, b"z" * 4096, N.FILE_SYNC)[0],
        "WRITE UNSTABLE": lambda: c.write(fh, 0, b"z" * 4096, N.UNSTABLE)[0],
        "COMMIT": lambda: c.commit(fh)[0],
        "CREATE": lambda: c.create(root, "new")[0],
        "MKDIR": lambda: c.mkdir(root, "newdir")[0],
        "LOOKUP": lambda: c.lookup(root, "nonexistent")[0],
        "READDIRPLUS": lambda: c.readdirplus(root)[0],
        "REMOVE": lambda: c.remove(root, "eio.dat"),
        "SETATTR size": lambda: c.setattr(fh, size=0)[0],
        "GETATTR": lambda: c.getattr(fh)[0],
    }
    must_fail = {"READ", "WRITE FILE_SYNC", "WRITE UNSTABLE", "COMMIT", "CREATE", "MKDIR", "REMOVE", "SETATTR size"}
    for name, fn in calls.items():
        try:
            results[name] = fn()
        except (OSError, EOFError) as e:
            results[name] = "connection lost: %s" % type(e).__name__
            c = N.Client("127.0.0.1", port)
        except (N.RpcError, N.XdrError) as e:
            results[name] = "rpc error: %s" % e
    info("statuses after the shutdown: %s" % ", ".join("%s=%s" % kv for kv in results.items()))
    for name, st in results.items():
        if name in must_fail:
            check("%s on a failed file system: an NFS error (got %s)" % (name, st),
                  isinstance(st, int) and st != N.NFS3_OK)
        else:
            check("%s on a failed file system: an NFS reply (got %s)" % (name, st), isinstance(st, int))
    check("data ops answer NFS3ERR_IO (5) or SERVERFAULT",
          all(results[k] in (N.NFS3ERR_IO, NFS3ERR_SERVERFAULT) for k in ("READ", "WRITE FILE_SYNC", "CREATE")),
          str({k: results[k] for k in ("READ", "WRITE FILE_SYNC", "CREATE")}))
    check("snfsd answers after the EIOs", alive(port, pid))


def ok(msg):
    check(msg, True)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    case, port, export, pid = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    {"cuts": cuts, "noreader": noreader, "nospc": nospc, "eio": eio}[case](port, export, pid)
    return 1 if N.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
