#!/usr/bin/env python3
"""nsrand: random namespace operations under a directory, each result and
the whole tree checked against a model.

    nsrand.py [-n OPS] [-s SEED] [-c EVERY] [-w WIDTH] [-C] DIR
    nsrand.py --hash DIR

DIR must be empty. Operations: create, write (a file's whole content),
mkdir, symlink, hard link, rename (files and directories, over existing
names or not, into other directories), unlink, rmdir, truncate; names
are picked mostly among existing ones, so the error cases come often
(EEXIST, ENOENT, ENOTDIR, EISDIR, ENOTEMPTY, EINVAL for a directory moved
under itself). Every operation's outcome (success or errno) must be the
model's. Every EVERY operations (default 25) and at the end the tree is
walked: names, types, sizes, link counts of files, symlink targets and
file contents must be the model's. On the first difference it prints it
with the last operations and exits 1; at the end "nsrand: ok N ops ..."
and the tree's summary hash (also printed by --hash DIR, to compare the
server's copy). -w WIDTH adds WIDTH more names, for directories of
hundreds of entries (listings in several READDIR calls). -C adds a name behind the model's back before the last
check, which must then fail (the test of the checker).
"""
import errno
import hashlib
import os
import random
import sys

NAMES = ["a", "b", "c", "d", "e", "long-" + "x" * 60, "s p", "u\u00e9"]


class Model:
    """Paths (relative, '/'-joined) to nodes; a file node is shared by its
    hard links: {'t': 'f', 'data': bytes}, {'t': 'd'}, {'t': 'l', 'to': str}."""

    def __init__(self):
        self.tree = {"": {"t": "d"}}

    def kind(self, p):
        n = self.tree.get(p)
        return n["t"] if n else None

    def children(self, p):
        pre = p + "/" if p else ""
        return [k for k in self.tree if k.startswith(pre) and k != p
                and "/" not in k[len(pre):]]

    def subtree(self, p):
        pre = p + "/"
        return [k for k in self.tree if k == p or k.startswith(pre)]

    def parent(self, p):
        return p.rsplit("/", 1)[0] if "/" in p else ""

    def nlink(self, node):
        return sum(1 for v in self.tree.values() if v is node)


def err(e):
    return errno.errorcode.get(e, str(e))


class Run:
    def __init__(self, root, seed):
        self.root = root
        self.rng = random.Random(seed)
        self.m = Model()
        self.hist = []
        self.counts = {}
        self.names = NAMES

    def path(self, p):
        return os.path.join(self.root, p) if p else self.root

    def pick_dir(self):
        if self.names is not NAMES and self.rng.random() < 0.7:
            return ""  # -w: fill the top directory
        dirs = [k for k, v in self.m.tree.items() if v["t"] == "d"]
        return self.rng.choice(dirs)

    def pick_any(self, existing=0.8):
        keys = [k for k in self.m.tree if k]
        if keys and self.rng.random() < existing:
            return self.rng.choice(keys)
        d = self.pick_dir()
        name = self.rng.choice(self.names)
        return d + "/" + name if d else name

    def fail(self, msg):
        print("nsrand: " + msg, file=sys.stderr)
        print("nsrand: last operations:", file=sys.stderr)
        for h in self.hist[-40:]:
            print("  " + h, file=sys.stderr)
        sys.exit(1)

    def do(self, what, expect, fn):
        """Run fn; expect is None (success) or an errno (or set of them)."""
        self.hist.append("%d: %s (model: %s)" % (
            len(self.hist), what,
            "ok" if expect is None else "/".join(err(e) for e in _set(expect))))
        try:
            fn()
            got = None
        except OSError as e:
            got = e.errno
        if got is None and expect is None:
            return True
        if got is not None and expect is not None and got in _set(expect):
            return False
        self.fail("%s: got %s, model says %s" % (
            what, "ok" if got is None else err(got),
            "ok" if expect is None else "/".join(err(e) for e in _set(expect))))

    # ---- expectations, as Linux reports them ----
    def walk_err(self, p):
        """The errno of resolving p's parent chain, or None."""
        parts = p.split("/")
        cur = ""
        for comp in parts[:-1]:
            cur = cur + "/" + comp if cur else comp
            k = self.m.kind(cur)
            if k is None:
                return errno.ENOENT
            if k != "d":
                return errno.ENOTDIR
        return None

    # ---- operations ----
    def op_create(self):
        p = self.pick_any(0.4)
        e = self.walk_err(p) or (errno.EEXIST if self.m.kind(p) else None)
        data = self.data()

        def fn():
            fd = os.open(self.path(p), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        if self.do("create %s (%d bytes)" % (p, len(data)), e, fn):
            self.m.tree[p] = {"t": "f", "data": data}

    def data(self):
        n = self.rng.choice([0, 1, 100, 4096, 5000, 70000])
        return bytes(self.rng.getrandbits(8) for _ in range(min(n, 64))) * (n // 64 + 1) \
            if n else b""

    def op_write(self):
        p = self.pick_any(0.9)
        k = self.m.kind(p)
        e = self.walk_err(p) or (errno.ENOENT if k is None else
                                 errno.EISDIR if k == "d" else None)
        if k == "l":  # opening follows the link: keep it simple
            return
        data = self.data()[: self.rng.choice([1, 10, 5000, 70000])]

        def fn():
            fd = os.open(self.path(p), os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        if self.do("write %s (%d bytes)" % (p, len(data)), e, fn):
            self.m.tree[p]["data"] = data

    def op_truncate(self):
        p = self.pick_any(0.9)
        k = self.m.kind(p)
        if k == "l":
            return
        e = self.walk_err(p) or (errno.ENOENT if k is None else
                                 errno.EISDIR if k == "d" else None)
        n = self.rng.choice([0, 1, 3000, 9000])
        if self.do("truncate %s %d" % (p, n), e,
                   lambda: os.truncate(self.path(p), n)):
            d = self.m.tree[p]["data"]
            self.m.tree[p]["data"] = d[:n] + b"\0" * max(0, n - len(d))

    def op_mkdir(self):
        p = self.pick_any(0.4)
        e = self.walk_err(p) or (errno.EEXIST if self.m.kind(p) else None)
        if self.do("mkdir %s" % p, e, lambda: os.mkdir(self.path(p))):
            self.m.tree[p] = {"t": "d"}

    def op_symlink(self):
        p = self.pick_any(0.4)
        to = self.rng.choice(["a", "../b", "x/y/z", "/etc/hostname", "s p"])
        e = self.walk_err(p) or (errno.EEXIST if self.m.kind(p) else None)
        if self.do("symlink %s -> %s" % (p, to), e,
                   lambda: os.symlink(to, self.path(p))):
            self.m.tree[p] = {"t": "l", "to": to}

    def op_link(self):
        src = self.pick_any(0.9)
        dst = self.pick_any(0.4)
        ks, kd = self.m.kind(src), self.m.kind(dst)
        e = self.walk_err(src) or (errno.ENOENT if ks is None else None)
        if e is None:
            e = self.walk_err(dst) or (errno.EEXIST if kd else
                                       errno.EPERM if ks == "d" else None)
        if self.do("link %s %s" % (src, dst), e,
                   lambda: os.link(self.path(src), self.path(dst),
                                   follow_symlinks=False)):
            self.m.tree[dst] = self.m.tree[src]

    def op_unlink(self):
        p = self.pick_any(0.9)
        k = self.m.kind(p)
        e = self.walk_err(p) or (errno.ENOENT if k is None else
                                 errno.EISDIR if k == "d" else None)
        if self.do("unlink %s" % p, e, lambda: os.unlink(self.path(p))):
            del self.m.tree[p]

    def op_rmdir(self):
        p = self.pick_any(0.9)
        if p == "":
            return
        k = self.m.kind(p)
        e = self.walk_err(p) or (errno.ENOENT if k is None else
                                 errno.ENOTDIR if k != "d" else
                                 errno.ENOTEMPTY if self.m.children(p) else None)
        if self.do("rmdir %s" % p, e, lambda: os.rmdir(self.path(p))):
            del self.m.tree[p]

    def op_rename(self):
        src = self.pick_any(0.95)
        dst = self.pick_any(0.6)
        ks, kd = self.m.kind(src), self.m.kind(dst)
        e = self.walk_err(src) or (errno.ENOENT if ks is None else None)
        if e is None:
            e = self.walk_err(dst)
        if e is None:
            if dst == src:
                e = None
            elif ks == "d" and (dst + "/").startswith(src + "/"):
                e = errno.EINVAL
            elif (src + "/").startswith(dst + "/"):
                e = errno.ENOTEMPTY  # onto its own ancestor
            elif kd == "d" and ks != "d":
                e = errno.EISDIR
            elif kd is not None and kd != "d" and ks == "d":
                e = errno.ENOTDIR
            elif kd == "d" and self.m.children(dst):
                e = {errno.ENOTEMPTY, errno.EEXIST}
            elif ks != "d" and kd is not None and self.m.tree[src] is self.m.tree[dst]:
                e = "same"  # hard links of one file: rename does nothing
        if e == "same" or (e is None and dst == src):
            self.do("rename %s %s (same file)" % (src, dst), None,
                    lambda: os.rename(self.path(src), self.path(dst)))
            return
        if self.do("rename %s %s" % (src, dst), e,
                   lambda: os.rename(self.path(src), self.path(dst))):
            moved = {}
            for k in self.m.subtree(src):
                moved[dst + k[len(src):]] = self.m.tree.pop(k)
            for k in self.m.subtree(dst) if kd is not None else []:
                self.m.tree.pop(k, None)
            self.m.tree.update(moved)

    # ---- the whole tree ----
    def check_tree(self):
        seen = {}
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            rel = os.path.relpath(dirpath, self.root)
            rel = "" if rel == "." else rel
            for n in dirnames + filenames:
                p = rel + "/" + n if rel else n
                st = os.lstat(os.path.join(dirpath, n))
                seen[p] = st
        want = {k for k in self.m.tree if k}
        if set(seen) != want:
            extra = sorted(set(seen) - want)[:5]
            missing = sorted(want - set(seen))[:5]
            self.fail("tree walk: extra %s, missing %s" % (extra, missing))
        for p, st in seen.items():
            node = self.m.tree[p]
            import stat as S
            t = "d" if S.S_ISDIR(st.st_mode) else "l" if S.S_ISLNK(st.st_mode) \
                else "f" if S.S_ISREG(st.st_mode) else "?"
            if t != node["t"]:
                self.fail("%s: type %s, model %s" % (p, t, node["t"]))
            if t == "l" and os.readlink(self.path(p)) != node["to"]:
                self.fail("%s: link to %r, model %r" % (
                    p, os.readlink(self.path(p)), node["to"]))
            if t == "f":
                if st.st_size != len(node["data"]):
                    self.fail("%s: size %d, model %d" % (p, st.st_size, len(node["data"])))
                if st.st_nlink != self.m.nlink(node):
                    self.fail("%s: %d links, model %d" % (p, st.st_nlink, self.m.nlink(node)))
                with open(self.path(p), "rb") as f:
                    if f.read() != node["data"]:
                        self.fail("%s: content differs from the model" % p)

    def summary(self):
        return tree_hash(self.root)


def _set(e):
    return e if isinstance(e, set) else {e}


def tree_hash(root):
    """One line: entries and a hash of names, types, sizes, links, targets
    and contents (no times, no inode numbers)."""
    h = hashlib.sha256()
    n = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        rel = os.path.relpath(dirpath, root)
        for name in sorted(dirnames + filenames):
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            n += 1
            h.update(("%s/%s %o %d\n" % (rel, name, st.st_mode & 0o170000,
                                         st.st_nlink if not os.path.isdir(p) or os.path.islink(p) else 0)).encode())
            if os.path.islink(p):
                h.update(os.readlink(p).encode() + b"\n")
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
    return "entries %d hash %s" % (n, h.hexdigest()[:16])


def main():
    args = sys.argv[1:]
    if args[:1] == ["--hash"]:
        print(tree_hash(args[1]))
        return 0
    ops, seed, every, corrupt, width = 500, 1, 25, False, 0
    while args and args[0].startswith("-"):
        o = args.pop(0)
        if o == "-n":
            ops = int(args.pop(0))
        elif o == "-s":
            seed = int(args.pop(0))
        elif o == "-c":
            every = int(args.pop(0))
        elif o == "-C":
            corrupt = True
        elif o == "-w":
            width = int(args.pop(0))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    if len(args) != 1 or os.listdir(args[0]):
        print("nsrand: DIR must be given and empty", file=sys.stderr)
        return 2
    r = Run(args[0], seed)
    if width:  # wide directories: many names, few of them directories
        r.names = NAMES + ["n%04d-%s" % (i, "y" * (i % 40)) for i in range(width)]
    table = [("create", r.op_create, 4), ("write", r.op_write, 2),
             ("truncate", r.op_truncate, 1), ("mkdir", r.op_mkdir, 3),
             ("symlink", r.op_symlink, 1), ("link", r.op_link, 2),
             ("unlink", r.op_unlink, 2), ("rmdir", r.op_rmdir, 2),
             ("rename", r.op_rename, 5)]
    names = [t[0] for t in table for _ in range(t[2])]
    fns = {t[0]: t[1] for t in table}
    for i in range(ops):
        op = r.rng.choice(names)
        fns[op]()
        r.counts[op] = r.counts.get(op, 0) + 1
        if every and (i + 1) % every == 0:
            r.check_tree()
    if corrupt:  # the negative control: a name behind the model's back
        open(os.path.join(r.root, "zz-not-in-the-model"), "w").close()
    r.check_tree()
    print("nsrand: ok %d ops, seed %d: %s" % (ops, seed, " ".join(
        "%s=%d" % (k, r.counts.get(k, 0)) for k, _, _ in table)))
    print(r.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
