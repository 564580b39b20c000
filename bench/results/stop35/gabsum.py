# Medians of gab.sh's R| lines and the ratios; usage: gabsum.py OUT
import sys, statistics as st
d = {}
for l in open(sys.argv[1]):
    if l.startswith('R|'):
        _, n, f, m, r, t = l.strip().split('|')[:6]
        d.setdefault((f, m), {}).setdefault(n, []).append(float(t))
for (f, m), v in d.items():
    med = {n: st.median(x) for n, x in v.items()}
    mn = {n: min(x) for n, x in v.items()}
    print(f"{f:10} {m:5} " + " ".join(f"{n} {med[n]:.3f}" for n in sorted(med)) +
          f" | B/A RP {med['b42']/med['a42']:.2f} (min {mn['b42']/mn['a42']:.2f})"
          f" A RP/READ {med['a42']/med['a41']:.2f} B RP/READ {med['b42']/med['a41']:.2f} (min {mn['b42']/mn['a41']:.2f})"
          f" B/knfsd {med['b42']/med['k42']:.2f} (min {mn['b42']/mn['k42']:.2f})")
