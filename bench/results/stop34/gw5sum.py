import statistics, sys
d = {}
order = []
for line in open(sys.argv[1]):
    p = line.strip().split("|")
    if p[0] != "R":
        continue
    n, t = p[1], float(p[3])
    a, b = [list(map(int, x.split())) for x in (p[4], p[5])]
    c = b[0] - a[0]
    if n not in d:
        order.append(n)
    d.setdefault(n, []).append((t, c, (b[1] - a[1]) / c * 1000, (b[2] - a[2]) / c * 1000, int(p[6]) * 10000 / c))
for n in order:
    v = d[n]
    m = lambda i: statistics.median(x[i] for x in v)
    print("%-5s n=%d time min %.3f med %.3f  calls %d  rtt/call %.0f us  exec/call %.0f us  server CPU/call %.0f us"
          % (n, len(v), min(x[0] for x in v), m(0), v[0][1], m(2), m(3), m(4)))
