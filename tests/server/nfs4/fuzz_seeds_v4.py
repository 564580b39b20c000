#!/usr/bin/env python3
"""fuzz_seeds_v4.py DIR: write NFSv4 COMPOUND seeds (whole RPC call records,
AUTH_SYS) for the fuzz_rpc target of tests/fuzz into DIR. They walk the
fuzz fixture's export (/tmp/snfs-fuzz/export) from the pseudo root, so the
mutations reach the operation decoders of 4.0, 4.1 and 4.2."""
import os
import struct
import sys


def u32(v): return struct.pack('>I', v & 0xffffffff)
def u64(v): return struct.pack('>Q', v)
def opq(b): return u32(len(b)) + b + b'\0' * (-len(b) % 4)


def header(xid):
    cred = u32(0) + opq(b'fz') + u32(0) + u32(0) + u32(0)
    return (u32(xid) + u32(0) + u32(2) + u32(100003) + u32(4) + u32(1) +
            u32(1) + opq(cred) + u32(0) + u32(0))


def compound(minor, ops):
    return opq(b'tag') + u32(minor) + u32(len(ops)) + b''.join(ops)


def walk(*names):
    return [u32(24)] + [u32(15) + opq(n.encode()) for n in names]


W = walk('tmp', 'snfs-fuzz', 'export')
GETATTR_ALL = u32(9) + u32(2) + u32(0xffffffff) + u32(0xffffffff)
ANON = u32(0) + b'\0' * 12
CHAN = u32(0) + u32(1 << 20) + u32(1 << 20) + u32(8192) + u32(16) + u32(8) + u32(0)
SEEDS = {
    'v40_walk': compound(0, W + [GETATTR_ALL, u32(10)]),
    'v40_readdir': compound(0, W + [u32(26) + u64(0) + u64(0) + u32(4096) + u32(8192) +
                                    u32(2) + u32(0x0010011a) + u32(0x00b0a23a)]),
    'v40_setclientid': compound(0, [u32(35) + b'verifier' + opq(b'fuzzclient') +
                                    u32(0x40000000) + opq(b'tcp') + opq(b'127.0.0.1.3.4') + u32(1)]),
    'v40_open': compound(0, W + [u32(18) + u32(1) + u32(3) + u32(0) + u64(0) + opq(b'owner') +
                                 u32(1) + u32(0) + u32(1) + u32(16) + opq(u64(0)) + u32(0) +
                                 opq(b'newfile'), u32(10)]),
    'v40_read_anon': compound(0, W + [u32(15) + opq(b'file'), u32(25) + ANON + u64(0) + u32(4096)]),
    'v40_lockt': compound(0, W + [u32(15) + opq(b'file'),
                                  u32(13) + u32(2) + u64(0) + u64(100) + u64(1) + opq(b'lo')]),
    'v41_exchange_id': compound(1, [u32(42) + b'verifie1' + opq(b'fz41') + u32(0) + u32(0) + u32(0)]),
    'v41_create_session': compound(1, [u32(43) + u64(1) + u32(1) + u32(0) + CHAN + CHAN +
                                       u32(0x40000000) + u32(1) + u32(0)]),
    'v42_seq_read_plus_seek': compound(2, [u32(53) + b'\0' * 16 + u32(1) + u32(0) + u32(0) + u32(0)] +
                                       W + [u32(15) + opq(b'sparse'),
                                            u32(68) + ANON + u64(0) + u32(65536),
                                            u32(69) + ANON + u64(0) + u32(1)]),
    'v40_create_rename_remove': compound(0, W + [u32(6) + u32(2) + opq(b'd1') + u32(0) + u32(0),
                                                 u32(16), u32(32),
                                                 u32(29) + opq(b'd1') + opq(b'd2'),
                                                 u32(28) + opq(b'd2')]),
}

if __name__ == '__main__':
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for i, (name, body) in enumerate(SEEDS.items()):
        with open(os.path.join(out, 'nfs4_' + name), 'wb') as f:
            f.write(header(0x4000 + i) + body)
    print(len(SEEDS), 'seeds in', out)
