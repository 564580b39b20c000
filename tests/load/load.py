#!/usr/bin/env python3
"""Load for t_load.sh (issue 7, "Load"): many idle connections plus
concurrent clients running a mixed NFSv3 workload, for a bounded time.

usage: load.py PORT EXPORT PID SECONDS CLIENTS IDLE [SNFS_CLIENTS SNFS]

- IDLE connections stay open and each sends a NULL about every 5 s (one
  selector in this process); every reply must come back with its xid.
- CLIENTS worker processes, each in its own directory wN, loop over
  CREATE/WRITE (UNSTABLE or FILE_SYNC, then COMMIT)/READ/GETATTR/LOOKUP/
  READDIRPLUS/REMOVE and check every answer against what they did (file
  contents, names in the directory, NOENT after REMOVE).
- SNFS_CLIENTS of those run the libsnfs command SNFS instead (cp in, cat
  back, compare, rm) when given.
- The server's VmRSS is sampled every 0.2 s.

Prints ok/not ok lines, "# ops/s ..." and "# peak RSS ...".
"""

import multiprocessing
import os
import random
import resource
import selectors
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import nfsrpc as N  # noqa: E402
from nfsrpc import check, rss_kib  # noqa: E402


# ---- one worker: a mixed workload in its own directory ----

class Worker:
    def __init__(self, port, export, n, deadline):
        self.c = N.Client("127.0.0.1", port, timeout=30)
        self.rng = random.Random(n)
        self.deadline = deadline
        self.files = {}          # name -> (fh, bytes)
        self.ops = 0
        self.errors = []
        self.next_name = 0
        root = self.c.mnt(export)
        self.ops += 1
        st, self.dir = self.c.mkdir(root, "w%d" % n)
        self.expect("MKDIR w%d" % n, st, N.NFS3_OK)

    def expect(self, what, got, want=N.NFS3_OK):
        self.ops += 1
        if got != want:
            self.errors.append("%s: %s, wanted %s" % (what, got, want))
            return False
        return True

    def op_create_write(self):
        name = "f%d" % self.next_name
        self.next_name += 1
        st, fh, _ = self.c.create(self.dir, name, how=N.GUARDED)
        if not self.expect("CREATE %s" % name, st):
            return
        data = self.rng.randbytes(self.rng.choice((512, 4096, 65536, 200000)))
        how = self.rng.choice((N.UNSTABLE, N.FILE_SYNC))
        st, n, _, verf = self.c.write(fh, 0, data, how)
        if self.expect("WRITE %s" % name, st) and n != len(data):
            self.errors.append("WRITE %s: count %d of %d" % (name, n, len(data)))
        if how == N.UNSTABLE:
            st, cverf = self.c.commit(fh)
            if self.expect("COMMIT %s" % name, st) and cverf != verf:
                self.errors.append("COMMIT %s: verifier changed without a restart" % name)
        self.files[name] = (fh, data)

    def op_read(self, name):
        fh, data = self.files[name]
        st, got, eof = self.c.read(fh, 0, len(data) + 100)
        if self.expect("READ %s" % name, st) and (got != data or not eof):
            self.errors.append("READ %s: %d bytes, eof %s, differ from the %d written" % (name, len(got), eof, len(data)))

    def op_getattr(self, name):
        fh, data = self.files[name]
        st, a = self.c.getattr(fh)
        if self.expect("GETATTR %s" % name, st) and a["size"] != len(data):
            self.errors.append("GETATTR %s: size %d, wanted %d" % (name, a["size"], len(data)))

    def op_lookup(self, name):
        st, fh, _ = self.c.lookup(self.dir, name)
        if self.expect("LOOKUP %s" % name, st) and fh != self.files[name][0]:
            self.errors.append("LOOKUP %s: another handle than CREATE gave" % name)

    def op_readdirplus(self):
        names, cookie, verf = set(), 0, b"\0" * 8
        while True:
            st, ents, eof, verf = self.c.readdirplus(self.dir, cookie, verf, 8192, 65536)
            if not self.expect("READDIRPLUS", st):
                return
            names.update(e[1] for e in ents)
            if eof or not ents:
                break
            cookie = ents[-1][2]
        names -= {".", ".."}
        if names != set(self.files):
            self.errors.append("READDIRPLUS: %s, wanted %s" % (sorted(names), sorted(self.files)))

    def op_remove(self, name):
        if self.expect("REMOVE %s" % name, self.c.remove(self.dir, name)):
            del self.files[name]
            self.expect("LOOKUP %s after REMOVE" % name, self.c.lookup(self.dir, name)[0], N.NFS3ERR_NOENT)

    def run(self):
        while time.monotonic() < self.deadline:
            r = self.rng.random()
            if not self.files or (r < 0.25 and len(self.files) < 20):
                self.op_create_write()
                continue
            name = self.rng.choice(sorted(self.files))
            if r < 0.45:
                self.op_read(name)
            elif r < 0.6:
                self.op_getattr(name)
            elif r < 0.75:
                self.op_lookup(name)
            elif r < 0.85:
                self.op_readdirplus()
            else:
                self.op_remove(name)


def worker_main(port, export, n, deadline, q):
    try:
        w = Worker(port, export, n, deadline)
        w.run()
        q.put((n, w.ops, w.errors[:5], len(w.errors)))
    except Exception as e:  # noqa: BLE001 - reported as a failure
        q.put((n, 0, ["%s: %s" % (type(e).__name__, e)], 1))


def snfs_main(snfs, port, export, n, deadline, q):
    """cp a file in with libsnfs, cat it back, compare, rm."""
    ops, errors = 0, []
    rng = random.Random(1000 + n)
    base = "nfs://127.0.0.1:%d%s/s%d" % (port, export, n)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        try:
            r = subprocess.run([snfs, "mkdir", base], capture_output=True, timeout=60)
            if r.returncode:
                errors.append("snfs mkdir: %s" % r.stderr.decode(errors="replace").strip())
            while time.monotonic() < deadline and not errors:
                data = rng.randbytes(rng.choice((1000, 100000, 1 << 20)))
                with open(src, "wb") as f:
                    f.write(data)
                url = "%s/f%d" % (base, ops)
                for argv in ([snfs, "cp", "-q", src, url], [snfs, "cat", url], [snfs, "rm", url]):
                    r = subprocess.run(argv, capture_output=True, timeout=60)
                    ops += 1
                    if r.returncode:
                        errors.append("%s: status %d: %s" % (" ".join(argv[1:3]), r.returncode,
                                                             r.stderr.decode(errors="replace").strip()[:200]))
                        break
                    if argv[1] == "cat" and r.stdout != data:
                        errors.append("snfs cat %s: %d bytes differ from the %d copied" % (url, len(r.stdout), len(data)))
                        break
        except Exception as e:  # noqa: BLE001
            errors.append("%s: %s" % (type(e).__name__, e))
    q.put(("snfs%d" % n, ops, errors[:5], len(errors)))


# ---- idle connections ----

class Idle:
    def __init__(self, port, n):
        self.sel = selectors.DefaultSelector()
        self.conns = []
        self.sent = self.replies = self.errors = 0
        self.err_msgs = []
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", port), 10)
            s.setblocking(False)
            st = {"sock": s, "buf": bytearray(), "want": set(), "xid": (i << 12) + 1}
            self.sel.register(s, selectors.EVENT_READ, st)
            self.conns.append(st)
        self.i = 0

    def ping_one(self):
        st = self.conns[self.i % len(self.conns)]
        self.i += 1
        st["xid"] += 1
        try:
            st["sock"].send(N.record_mark(N.build_call(st["xid"], N.NFS_PROG, 3, 0, b"", N.AUTH_NULL)))
            st["want"].add(st["xid"])
            self.sent += 1
        except OSError as e:
            self.fail("send: %s" % e)

    def fail(self, msg):
        self.errors += 1
        if len(self.err_msgs) < 5:
            self.err_msgs.append(msg)

    def poll(self, timeout):
        for key, _ in self.sel.select(timeout):
            st = key.data
            try:
                chunk = st["sock"].recv(65536)
            except OSError as e:
                self.fail("recv: %s" % e)
                self.sel.unregister(st["sock"])
                continue
            if not chunk:
                self.fail("connection closed by the server")
                self.sel.unregister(st["sock"])
                continue
            st["buf"] += chunk
            for rec in N.take_records(st["buf"]):
                xid = N.reply_xid(rec)
                try:
                    N.parse_reply(rec, xid).done()
                    st["want"].remove(xid)
                    self.replies += 1
                except (KeyError, N.RpcError, N.XdrError) as e:
                    self.fail("NULL reply %#x: %s" % (xid, e))

    def outstanding(self):
        return sum(len(st["want"]) for st in self.conns)


def main():
    if len(sys.argv) not in (7, 9):
        sys.exit(__doc__)
    port, export, pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    seconds, nclients, nidle = float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    nsnfs, snfs = (int(sys.argv[7]), sys.argv[8]) if len(sys.argv) == 9 else (0, None)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    idle = Idle(port, nidle)
    check("%d idle connections open" % nidle, len(idle.conns) == nidle)
    q = multiprocessing.Queue()
    t0 = time.monotonic()
    deadline = t0 + seconds
    procs = []
    for n in range(nclients):
        if n < nsnfs:
            p = multiprocessing.Process(target=snfs_main, args=(snfs, port, export, n, deadline, q))
        else:
            p = multiprocessing.Process(target=worker_main, args=(port, export, n, deadline, q))
        p.start()
        procs.append(p)
    peak, rss_samples = 0, 0
    # Each idle connection pings about every 5 s.
    interval = 5.0 / max(nidle, 1)
    next_ping, next_rss = time.monotonic(), 0.0
    while time.monotonic() < deadline:
        now = time.monotonic()
        while next_ping <= now and nidle:
            idle.ping_one()
            next_ping += interval
        if now >= next_rss:
            peak = max(peak, rss_kib(pid))
            rss_samples += 1
            next_rss = now + 0.2
        idle.poll(min(0.05, max(0, next_ping - time.monotonic())))
    results = []
    for _ in procs:
        try:
            results.append(q.get(timeout=120))
        except Exception:  # noqa: BLE001 - queue.Empty
            break
    for p in procs:
        p.join(30)
    elapsed = time.monotonic() - t0
    end = time.monotonic() + 10
    while idle.outstanding() and time.monotonic() < end:
        idle.poll(0.1)
    peak = max(peak, rss_kib(pid))
    total_ops = sum(r[1] for r in results)
    nerr = sum(r[3] for r in results)
    check("all %d clients reported" % nclients, len(results) == nclients, "%d reported" % len(results))
    for r in results:
        for e in r[2]:
            print("# client %s: %s" % (r[0], e))
    py = [r for r in results if not str(r[0]).startswith("snfs")]
    sn = [r for r in results if str(r[0]).startswith("snfs")]
    check("%d python clients: no protocol error in %d ops" % (len(py), sum(r[1] for r in py)),
          sum(r[3] for r in py) == 0, "%d errors" % sum(r[3] for r in py))
    if nsnfs:
        check("%d libsnfs (snfs command) clients: no error in %d commands" % (len(sn), sum(r[1] for r in sn)),
              sum(r[3] for r in sn) == 0, "%d errors" % sum(r[3] for r in sn))
    for e in idle.err_msgs:
        print("# idle: %s" % e)
    check("%d idle connections: %d NULLs, all answered" % (nidle, idle.sent),
          idle.errors == 0 and idle.outstanding() == 0 and idle.replies == idle.sent,
          "%d errors, %d unanswered" % (idle.errors, idle.outstanding()))
    print("# ops/s %.0f (%d client ops in %.1fs, %d errors, plus %d idle NULLs)" %
          (total_ops / elapsed, total_ops, elapsed, nerr, idle.sent))
    print("# sampled peak RSS %.1f MiB (%d samples)" % (peak / 1024, rss_samples))
    return 1 if N.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
