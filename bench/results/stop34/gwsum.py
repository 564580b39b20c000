import statistics, sys
d = {}
for line in open(sys.argv[1]):
    p = line.strip().split("|")
    if p[0] != "R":
        continue
    f, s, t = p[1], p[2], float(p[4])
    a, b = [list(map(int, x.split())) for x in (p[5], p[6])]
    n = b[0] - a[0]
    d.setdefault((f, s), []).append((t, n, (b[1] - a[1]) / n * 1000, (b[2] - a[2]) / n * 1000))
for (f, s), v in d.items():
    print("%-9s %-6s n=%d time min %.3f med %.3f  calls %d  rtt/call med %.0f us  exec/call med %.0f us"
          % (f, s, len(v), min(x[0] for x in v), statistics.median(x[0] for x in v), v[0][1],
             statistics.median(x[2] for x in v), statistics.median(x[3] for x in v)))
