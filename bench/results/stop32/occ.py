import collections,sys
iv=[]
for l in open(sys.argv[1]):
    f=l.split()
    if len(f)<6: continue
    try: t=float(f[0]); cpu=int(f[1].strip('[]')); run=float(f[-1])/1e3
    except: continue
    task=f[2]
    kind='srv' if task.startswith('snfsd') else 'cli' if task.startswith('snfs') else 'idle' if task.startswith('<idle>') else 'other'
    iv.append((t-run,t,cpu,kind))
t0=min(a for a,b,c,k in iv if k=='cli'); t1=max(b for a,b,c,k in iv if k=='cli')
step=1e-5; N=int((t1-t0)/step)
occ=[['idle','idle'] for _ in range(N)]
for a,b,c,k in iv:
    i0=max(0,int((a-t0)/step)); i1=min(N,int((b-t0)/step))
    for i in range(i0,i1): occ[i][c]=k
st=collections.Counter(tuple(sorted(o)) for o in occ)
for k,v in st.most_common(): print(k, f"{v*step*1e3:.1f} ms")
print("span %.1f ms" % ((t1-t0)*1e3))
