export INST="auto:/tmp/g1/w/snfsd-new:;mh64:/tmp/g1/w/snfsd-new:readplus_min_hole=65536" RUNS=7 VERS="4.2" FILES="mixed-16d mixed-32d" STATES="cold warm"
bash /work/main/bench/results/stop27/guest_split.sh
