#!/usr/bin/env python3
"""NLM over a real network, server restarts and lock reclaim: the
scenarios of t_kernel_nlm_ns.sh, run in the test guest by nlm_ns_guest.sh.

snfsd runs in the guest's network namespace "srv" (its own address, its
own portmapper on port 111), the kernel NFS client, rpcbind, rpc.statd and
lockd in the root namespace: two hosts on a veth pair, so the server's
NLM_GRANTED call backs and SM_NOTIFY reach the client's lock manager and
statd through the client's portmapper. The last scenario gives the
server's namespace rpcbind and rpc.statd, which then relays the client's
restart to snfsd.

usage: nlm_ns_guest.py srv-start TAG    start snfsd in netns srv, wait for it
       nlm_ns_guest.py srv-stop SIG     stop it, print its exit status
       nlm_ns_guest.py run V3DIR V3BDIR V4DIR

V3DIR, V3BDIR and V4DIR are one directory of the export through the v3
mount, the second (nosharecache) v3 mount and the v4.2 mount. The server
is described by the environment (set by nlm_ns_guest.sh): NLMNS_SNFSD,
NLMNS_ADDR, NLMNS_EXPORT, NLMNS_STATE, NLMNS_SNAP (the state directory as
it was before any lock), NLMNS_LOG, NLMNS_RUN, NLMNS_LEASE.

The lock holders are locks_guest.py's worker processes (imported from it).
Prints "R|name rc" (rc 0: as expected) and "G|name: what was seen". `run`
exits 0 when it ran to the end, whatever the results.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
# locks_guest.py reads its four mount directories from argv when imported;
# only its workers and result helpers are used here, never those paths.
_argv, sys.argv = sys.argv, [sys.argv[0], "-", "-", "-", "-"]
import locks_guest as L  # noqa: E402

sys.argv = _argv

E = os.environ.get
SNFSD, ADDR, EXPORT = E("NLMNS_SNFSD", ""), E("NLMNS_ADDR", "10.9.0.2"), E("NLMNS_EXPORT", "")
STATE, SNAP, LOG = E("NLMNS_STATE", ""), E("NLMNS_SNAP", ""), E("NLMNS_LOG", "/tmp/snfsd.log")
RUN, LEASE = E("NLMNS_RUN", "/tmp"), int(E("NLMNS_LEASE", "10"))
PIDFILE = os.path.join(RUN, "snfsd.pid")
TAGFILE = os.path.join(RUN, "snfsd.tag")  # the running server's start TAG
MNTNS = ""  # the mount namespace snfsd starts in, once statd_up made one
# A waiter told by NLM_GRANTED has the lock at once; one left to its own
# retry (NLMCLNT_POLL_TIMEOUT) waits up to 30 s. 5 s separates the two
# even in the emulated guest.
CB_LIMIT = 5.0


def log_mark(text):
    with open(LOG, "a") as f:
        f.write(f"=== nlm_ns_guest: {text} (uptime {uptime():.1f}s)\n")


def uptime():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def listening(port):
    try:
        with socket.create_connection((ADDR, port), timeout=1):
            return True
    except OSError:
        return False


def srv_start(tag, timeout=60):
    """Start snfsd in netns srv in the background (a shell keeps its exit
    status in RUN/rc.TAG) and wait until NFS and portmap answer. Returns
    the seconds it took, or None."""
    rc = os.path.join(RUN, f"rc.{tag}")
    for q in (PIDFILE, rc):
        if os.path.exists(q):
            os.unlink(q)
    with open(TAGFILE, "w") as f:
        f.write(tag)
    log_mark(f"start {tag}")
    # nsenter --net, not "ip netns exec": that one also gives the server
    # a mount namespace of its own, a copy of the guest's, with the NFS
    # mounts there at the time (mounts are private here, no systemd). When
    # the client unmounts, the copy holds the last reference, and the
    # server's own exit then tears the mounts down with calls to itself
    # (seen: a SIGTERMed server stuck in exit, rpc_wait_bit_killable).
    mnt = f" --mount={MNTNS}" if MNTNS else ""
    cmd = (f"SNFSD_NFS4_LEASE={LEASE} nsenter --net=/run/netns/srv{mnt} '{SNFSD}' -l {ADDR} -p 2049 "
           f"-s '{STATE}' -e '{EXPORT}:rw,insecure,no_root_squash' >>'{LOG}' 2>&1 & "
           f"echo $! >'{PIDFILE}.tmp'; mv '{PIDFILE}.tmp' '{PIDFILE}'; wait $!; echo $? >'{rc}.tmp'; mv '{rc}.tmp' '{rc}'")
    subprocess.Popen(["bash", "-c", cmd], start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if os.path.exists(rc):
            return None  # it exited
        if os.path.exists(PIDFILE) and listening(2049) and listening(111):
            return time.monotonic() - t0
        time.sleep(0.1)
    return None


def srv_stop(sig, timeout=60):
    """Signal snfsd; its exit status (None if it did not end)."""
    try:
        with open(PIDFILE) as f:
            pid = int(f.read())
    except (OSError, ValueError):
        return None
    with open(TAGFILE) as f:
        rc = os.path.join(RUN, "rc." + f.read())
    log_mark(f"SIG{sig} to {pid}")
    try:
        os.kill(pid, getattr(signal, "SIG" + sig))
    except ProcessLookupError:
        pass
    # the shell that started it writes the status once it ended (ASan's
    # leak check at exit takes a moment)
    status = None
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if os.path.exists(rc):
            with open(rc) as f:
                status = f.read().strip()
            break
        time.sleep(0.1)
    if status is None and os.path.exists(f"/proc/{pid}"):
        hang_report(pid, f"still running {timeout}s after SIG{sig}")
        os.kill(pid, signal.SIGKILL)
    os.unlink(PIDFILE)
    log_mark(f"stopped by SIG{sig}: exit status {status}")
    return int(status) if status and status.isdigit() else None


def hang_report(pid, why):
    """What a server that does not end is doing: its threads' states and
    kernel wait channels, and their stacks (gdb), into the log."""
    lines = [f"{why}:"]
    for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                st = f.read().split(") ")[-1].split()[0]
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                wchan = f.read().strip()
        except OSError:
            continue
        lines.append(f"thread {tid} {comm} state {st} wchan {wchan}")
    try:
        out = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt"],
                             capture_output=True, text=True, timeout=30)
        lines += [ln for ln in out.stdout.splitlines() if ln.startswith(("#", "Thread"))]
    except (OSError, subprocess.TimeoutExpired) as e:
        lines.append(f"gdb: {e!r}")
    with open(LOG, "a") as f:
        for ln in lines:
            f.write(f"=== hang: {ln}\n")


def log_count(text):
    with open(LOG, errors="replace") as f:
        return sum(text in line for line in f)


def not_granted(r):
    """A lock the server held back: refused (EAGAIN/EACCES), failed
    (ENOLCK: Linux's answer to a grace period it gave up waiting out), or
    still waiting in the client's retry loop."""
    return r[0] == "timeout" or (r[0] == "err" and r[1] in ("EAGAIN", "EACCES", "ENOLCK"))


V3 = V3B = V4 = ""


def p(mount, name):
    return os.path.join(mount, name)


# ---- the scenarios ------------------------------------------------------


def s_basics():
    """Check 1: a lock on /mnt3 refuses /mnt3b (the server's answer: no
    shared cache, other inodes), over the veth."""
    a, b2 = L.worker("nb-a"), L.worker("nb-b2")
    L.must("nb-open-a", a.open(p(V3, "basic")))
    L.must("nb-open-b2", b2.open(p(V3B, "basic")))
    L.expect_granted("nb-a-write-0-99", a.lock("w", 0, 100))
    L.expect_refused("nb-b-write-50-149-refused", b2.lock("w", 50, 100))
    L.expect_holder("nb-b-getlk-nlm-test", b2.getlk("w", 50, 100), "write", 0, 100)
    L.expect_granted("nb-b-write-100-199-beside", b2.lock("w", 100, 100))
    L.must("nb-a-unlock", a.lock("u", 0, 100))
    L.expect_granted("nb-b-write-0-99-after-unlock", b2.lock("w", 0, 100))
    L.done_all()


def s_callback():
    """Check 2: a v3 F_SETLKW waiter on /mnt3b behind a holder on /mnt3
    gets the lock within seconds of the release: the server's NLM_GRANTED
    reached the client's lockd (found through 10.9.0.1's portmapper),
    long before Linux's 30 s retry."""
    before = log_count("cannot call")
    a, b2 = L.worker("cb-a"), L.worker("cb-b2")
    L.must("cb-open-a", a.open(p(V3, "cb")))
    L.must("cb-open-b2", b2.open(p(V3B, "cb")))
    L.must("cb-a-lock", a.lock("w", 0, 100))
    b2.send("lockw", "f", "w", 0, 100)
    time.sleep(2)
    r = b2.result(0)
    L.result("cb-b-waits-behind-holder", r[0] == "timeout", f"got {r}")
    if r[0] != "timeout":
        raise L.Abort("cb-b-waits-behind-holder")
    t = time.monotonic()
    L.must("cb-a-unlock", a.lock("u", 0, 100))
    r = b2.result(40)
    took = time.monotonic() - t
    L.result("cb-granted-within-5s", r == L.GRANTED and took < CB_LIMIT,
             f"got {r} {took:.2f}s after the release (Linux's own retry: 30 s)")
    print(f"G|call back: waiter granted {took:.2f}s after the release", flush=True)
    if r == L.GRANTED:
        L.expect_refused("cb-waiter-holds-after-grant", a.lock("w", 0, 100))
    n = log_count("cannot call") - before
    L.result("cb-no-cannot-call-in-log", n == 0, f"{n} 'cannot call' lines in the snfsd log")
    L.done_all()


def s_restart(sig):
    """Check 3: A (/mnt3) holds a v3 write lock, C (/mnt4) a v4.2 one,
    while snfsd restarts (SIGTERM or SIGKILL, same state directory). The
    restarted server tells the client's statd (SM_NOTIFY naming the
    address the client mounted), whose lockd reclaims A's lock in the
    grace period; the v4.2 client reclaims C's. Meanwhile (a) a new lock
    from /mnt3b is held back; after the grace period (b) A's and C's bytes
    are still theirs, free bytes are granted; (c) A unlocks and /mnt3b
    gets the bytes."""
    t = sig.lower()
    a, b2, c = L.worker(f"rs-{t}-a"), L.worker(f"rs-{t}-b2"), L.worker(f"rs-{t}-c")
    L.must(f"rs-{t}-open-a", a.open(p(V3, f"rs-{t}")))
    L.must(f"rs-{t}-open-b2", b2.open(p(V3B, f"rs-{t}")))
    L.must(f"rs-{t}-open-b2-v4file", b2.open(p(V3B, f"rs4-{t}"), "v4f"))
    L.must(f"rs-{t}-open-c", c.open(p(V4, f"rs4-{t}")))
    L.must(f"rs-{t}-a-lock", a.lock("w", 0, 100))
    L.must(f"rs-{t}-c-lock", c.lock("w", 0, 100))
    L.expect_refused(f"rs-{t}-held-before-restart", b2.lock("w", 0, 100))
    L.expect_refused(f"rs-{t}-v4-held-before-restart", b2.lock("w", 0, 100, "v4f"))

    rc = srv_stop(sig)
    want = 0 if sig == "TERM" else 128 + 9
    L.result(f"rs-{t}-server-exit", rc == want, f"exit status {rc}, want {want}")
    took = srv_start(f"after-{t}")
    L.result(f"rs-{t}-server-restarted", took is not None,
             f"listening {took:.1f}s after the start" if took is not None else "not listening")
    if took is None:
        raise L.Abort(f"rs-{t}-server-restarted")
    t0 = time.monotonic()

    # (a) a new lock on bytes nobody holds, at once: held back by grace.
    # Linux's lockd retries a DENIED_GRACE_PERIOD answer itself, so the
    # F_SETLK stays in the kernel until the grace period is over.
    b2.send("lock", "f", "w", 1000, 100)
    window = max(1.0, LEASE * 0.6)
    r = b2.result(window)
    at = time.monotonic() - t0
    L.result(f"rs-{t}-new-lock-held-back-in-grace", not_granted(r),
             f"got {r} {at:.1f}s after the restart (grace {LEASE}s)")
    if r[0] == "timeout":
        r = b2.result(LEASE * 6)
        at = time.monotonic() - t0
    L.result(f"rs-{t}-new-lock-granted-after-grace", r == L.GRANTED,
             f"got {r} {at:.1f}s after the restart (grace {LEASE}s)")
    if L.hung(r):
        raise L.Abort(f"rs-{t}-new-lock-granted-after-grace")
    # That answer came at or after the grace period's end; give the
    # server a moment past it in any case (reclaims after it are refused,
    # so what is held now stays so).
    while time.monotonic() - t0 < LEASE + 2:
        time.sleep(0.2)

    # (b) the reclaimed locks still exclude the other mount
    r = b2.lock("w", 0, 100)
    L.result(f"rs-{t}-v3-lock-reclaimed", L.refused(r),
             f"/mnt3b lock on A's bytes {time.monotonic() - t0:.1f}s after the restart: got {r}")
    if r == L.GRANTED:
        b2.lock("u", 0, 100)  # not reclaimed: let the bytes go again
    L.expect_holder(f"rs-{t}-v3-getlk-sees-reclaimed", b2.getlk("w", 0, 100), "write", 0, 100)
    L.expect_granted(f"rs-{t}-free-bytes-granted", b2.lock("w", 100, 100))
    r = b2.lock("w", 0, 100, "v4f")
    L.result(f"rs-{t}-v4-lock-reclaimed", L.refused(r), f"/mnt3b lock on C's bytes: got {r}")
    if r == L.GRANTED:
        b2.lock("u", 0, 100, "v4f")

    # (c) A still owns its lock: it unlocks, and /mnt3b gets the bytes
    L.expect_granted(f"rs-{t}-a-unlocks", a.lock("u", 0, 100))
    L.expect_granted(f"rs-{t}-bytes-granted-after-a-unlocks", b2.lock("w", 0, 100))
    L.expect_granted(f"rs-{t}-c-unlocks", c.lock("u", 0, 100))
    L.expect_granted(f"rs-{t}-v4-bytes-granted-after-c-unlocks", b2.lock("w", 0, 100, "v4f"))
    print(f"G|rs-{t}: scenario done {time.monotonic() - t0:.1f}s after the restart", flush=True)
    L.done_all()


def s_restart_term():
    s_restart("TERM")


def s_restart_kill():
    s_restart("KILL")


def s_control():
    """Check 4, the negative control of check 3(b): the same restart, but
    the server comes back with its state directory as it was before any
    client locked (the file handle key only: no record of the client
    host). No one tells the client, nothing is reclaimed, and /mnt3b gets
    A's bytes though A's process still thinks it holds them."""
    a, b2 = L.worker("ctl-a"), L.worker("ctl-b2")
    L.must("ctl-open-a", a.open(p(V3, "ctl")))
    L.must("ctl-open-b2", b2.open(p(V3B, "ctl")))
    L.must("ctl-a-lock", a.lock("w", 0, 100))
    L.expect_refused("ctl-held-before-restart", b2.lock("w", 0, 100))
    rc = srv_stop("TERM")
    L.result("ctl-server-exit", rc == 0, f"exit status {rc}")
    for name in os.listdir(STATE):
        q = os.path.join(STATE, name)
        shutil.rmtree(q) if os.path.isdir(q) and not os.path.islink(q) else os.unlink(q)
    for name in os.listdir(SNAP):
        shutil.copy2(os.path.join(SNAP, name), STATE)
    print("G|ctl: state directory restored to its snapshot: "
          + " ".join(sorted(os.listdir(STATE))), flush=True)
    took = srv_start("ctl")
    L.result("ctl-server-restarted", took is not None, f"took {took}")
    if took is None:
        raise L.Abort("ctl-server-restarted")
    t0 = time.monotonic()
    # Not in grace (nothing recorded): granted as soon as lockd's
    # connection is back. A long timeout only in case it is.
    r = b2.call("lock", "f", "w", 0, 100, timeout=LEASE * 6)
    L.result("ctl-no-record-other-mount-gets-a-bytes", r == L.GRANTED,
             f"got {r} {time.monotonic() - t0:.1f}s after the restart")
    L.done_all()


def statd_up():
    """rpcbind and rpc.statd in netns srv, as on a server host running
    nfs-common; a mount namespace of their own keeps them off the
    client's /run/rpcbind.sock (a unix socket is found by path, across
    network namespaces) and out of the NFS mounts (unmounted there)."""
    sm = os.path.join(RUN, "statd")
    for d in ("sm", "sm.bak"):
        os.makedirs(os.path.join(sm, d), exist_ok=True)
    script = ("for m in /mnt3 /mnt3b /mnt4; do umount -l $m 2>/dev/null; done; "
              "mount -t tmpfs tmpfs /run && mkdir -p /run/rpcbind || exit 1; "
              f"rpcbind -f -w </dev/null >'{sm}.rpcbind.log' 2>&1 & echo $!; sleep 0.5; "
              f"rpc.statd --no-notify -F -d -P '{sm}' </dev/null >'{sm}.log' 2>&1 &")
    out = subprocess.run(["nsenter", "--net=/run/netns/srv", "unshare", "-m", "sh", "-c", script],
                         capture_output=True, text=True, timeout=60)
    global MNTNS
    for line in (out.stdout + out.stderr).splitlines():
        print(f"G|statd-up: {line}", flush=True)
    pid = out.stdout.split()[:1]
    if not pid or not pid[0].isdigit():
        return False
    # snfsd joins them there: it registers through /run/rpcbind.sock.
    MNTNS = f"/proc/{pid[0]}/ns/mnt"
    for _ in range(50):
        q = subprocess.run(["rpcinfo", "-p", ADDR], capture_output=True, text=True)
        if any(ln.split()[:1] == ["100024"] for ln in q.stdout.splitlines()):
            return True
        time.sleep(0.2)
    return False


def s_statd_relay():
    """Check 5: the server's host runs rpcbind and rpc.statd, as a Debian
    NFS server does. snfsd registers with rpcbind, asks rpc.statd to watch
    the client host when it takes a v3 lock (SM_MON), and when the client
    "restarts" (sm-notify -f: its statd tells the server host's rpc.statd)
    rpc.statd relays that to snfsd (NLM procedure 16), which drops the
    client's locks: /mnt3b then gets the bytes /mnt3's process still
    thinks it holds. Last: it leaves rpcbind and rpc.statd running."""
    rc = srv_stop("TERM")
    L.result("relay-server-exit", rc == 0, f"exit status {rc}")
    L.result("relay-rpcbind-statd-up", statd_up(), "rpc.statd registered at the server's rpcbind")
    took = srv_start("relay")
    L.result("relay-server-started", took is not None, f"took {took}")
    if took is None:
        raise L.Abort("relay-server-started")
    registered = False
    for _ in range(50):  # once it listens, it registers
        if log_count("registered nfs, mountd and nlockmgr with rpcbind"):
            registered = True
            break
        time.sleep(0.2)
    L.result("relay-server-registered-with-rpcbind", registered, "snfsd's log")
    a, b2 = L.worker("relay-a"), L.worker("relay-b2")
    L.must("relay-open-a", a.open(p(V3, "relay")))
    L.must("relay-open-b2", b2.open(p(V3B, "relay")))
    # The restart's grace period first (only reclaims): the client waits.
    r = a.call("lock", "f", "w", 0, 100, timeout=LEASE * 6)
    L.result("relay-a-lock", r == L.GRANTED, f"got {r}")
    watched = False
    for _ in range(50):
        if log_count("nsm: rpc.statd watches 10.9.0.1 for us"):
            watched = True
            break
        time.sleep(0.2)
    L.result("relay-statd-watches-client", watched, "snfsd's log")
    L.expect_refused("relay-held-before-notify", b2.lock("w", 0, 100))
    try:
        out = subprocess.run(["sm-notify", "-f", "-d"], capture_output=True, text=True, timeout=60)
        for line in (out.stdout + out.stderr).splitlines():
            print(f"G|sm-notify: {line}", flush=True)
        L.result("relay-sm-notify-ran", out.returncode == 0, f"exit {out.returncode}")
    except (OSError, subprocess.TimeoutExpired) as e:
        L.result("relay-sm-notify-ran", False, repr(e))
    r = b2.lock("w", 0, 100)
    for _ in range(50):  # statd relays within a second or two
        if r == L.GRANTED:
            break
        time.sleep(0.2)
        r = b2.lock("w", 0, 100)
    L.result("relay-restarted-client-locks-dropped", r == L.GRANTED, f"got {r}")
    L.result("relay-log-says-relayed", log_count("relayed by rpc.statd") >= 1, "snfsd's log")
    try:
        with open(os.path.join(RUN, "statd.log"), errors="replace") as f:
            for line in f.read().splitlines()[-40:]:
                print(f"G|server's rpc.statd: {line}", flush=True)
    except OSError as e:
        print(f"G|server's rpc.statd: no log: {e}", flush=True)
    L.done_all()


def run():
    for s in (s_basics, s_callback, s_restart_term, s_restart_kill, s_control, s_statd_relay):
        name = s.__name__
        t0 = time.monotonic()
        try:
            s()
        except L.Abort:
            pass  # reported where it happened
        except Exception as e:  # a bug here must not hide the others
            L.result(f"{name}-crashed", False, repr(e))
        finally:
            # The workers' exits close their files, which unlocks on the
            # server: a hard mount waits forever for one that is down.
            if not os.path.exists(PIDFILE):
                took = srv_start(f"recover-after-{name}")
                print(f"G|{name}: server restarted after the scenario left it down: {took}",
                      flush=True)
            L.done_all()
        print(f"G|{name} took {time.monotonic() - t0:.1f}s", flush=True)


def main():
    global V3, V3B, V4
    cmd = sys.argv[1]
    if cmd == "srv-start":
        took = srv_start(sys.argv[2])
        print(f"snfsd listening after {took}s" if took is not None else "snfsd not listening")
        sys.exit(0 if took is not None else 1)
    if cmd == "srv-stop":
        rc = srv_stop(sys.argv[2])
        print(rc)
        sys.exit(0 if rc is not None else 1)
    if cmd == "run":
        V3, V3B, V4 = sys.argv[2:5]
        run()
        sys.exit(0)
    sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
