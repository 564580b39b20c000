import sys,statistics,collections
t=collections.defaultdict(list); c=collections.defaultdict(list)
for l in open(sys.argv[1]):
    p=l.split()
    if p[0]!='R': continue
    k=(p[1],p[2],p[3]); t[k].append(float(p[4]))
    if len(p)>5: c[k].append(int(p[5]))
for k in sorted(t):
    v=sorted(t[k]); print('%-10s %s %-6s med %.3f min %.3f  cpu ticks med %s'%(k[0],k[1],k[2],statistics.median(v),v[0], statistics.median(c[k]) if c[k] else '-'))
