import sys, statistics as S, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    if not l.startswith('R '): continue
    p = l.split()
    f, st, n, t = p[1], p[2], p[3], float(p[4])
    kv = dict(zip(p[5::2], p[6::2]))
    d[(f, st, n)].append((t, float(kv['rtt']), float(kv['exec']), int(kv['cpu_u']), int(kv['cpu_s']), int(kv['ops'])))
print("%-9s %-4s %-9s %7s %7s %7s %7s %6s %6s %5s" % ("file", "st", "mount", "min", "med", "rtt", "exec", "cpu_u", "cpu_s", "ops"))
for k in sorted(d):
    v = d[k]
    print("%-9s %-4s %-9s %7.3f %7.3f %7.3f %7.3f %6.1f %6.1f %5d" % (k[0], k[1], k[2], min(x[0] for x in v), S.median(x[0] for x in v), S.median(x[1] for x in v), S.median(x[2] for x in v), S.median(x[3] for x in v), S.median(x[4] for x in v), v[0][5]))
