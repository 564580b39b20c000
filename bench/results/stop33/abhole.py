import subprocess,time,statistics,sys
snfs="/work/main/build/snfs"
urls={"old":"nfs://127.0.0.1:23921/tmp/g/hole?version=4.2","new":"nfs://127.0.0.1:23922/tmp/g/hole?version=4.2"}
res={k:[] for k in urls}
N=int(sys.argv[1]) if len(sys.argv)>1 else 40
for i in range(N):
    for k,u in urls.items():
        a=time.perf_counter(); subprocess.run([snfs,"-q","cat",u],stdout=subprocess.DEVNULL); res[k].append(time.perf_counter()-a)
for k,v in res.items():
    v.sort(); print(k,"min %.2f p25 %.2f med %.2f ms"%(v[0]*1e3,v[len(v)//4]*1e3,statistics.median(v)*1e3))
