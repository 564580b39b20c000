# snfsd/knfsd READ_PLUS and snfsd READ_PLUS/READ per (file, mode) from a
# sparse_kernel.md; usage: python3 gsum.py FILE.md
import sys
rows = {}
for l in open(sys.argv[1]):
    c = [x.strip() for x in l.strip().strip('|').split('|')]
    if len(c) < 6 or not l.startswith('| '):
        continue
    try:
        rows[(c[0], c[1], c[2], c[3])] = (float(c[4]), float(c[5]))
    except ValueError:
        pass
seen = []
for k in rows:
    if (k[0], k[1]) not in seen:
        seen.append((k[0], k[1]))
for f, m in seen:
    s = rows.get((f, m, 'snfsd', '4.2: READ_PLUS'))
    k = rows.get((f, m, 'knfsd', '4.2: READ_PLUS'))
    r = rows.get((f, m, 'snfsd', '4.1: READ'))
    if s and k and r:
        print(f"{f:10} {m:38} snfsd/knfsd RP med {s[1]/k[1]:.2f} min {s[0]/k[0]:.2f}"
              f"   snfsd RP/READ med {s[1]/r[1]:.2f} min {s[0]/r[0]:.2f}")
