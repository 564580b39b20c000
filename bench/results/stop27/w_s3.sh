export INST="ew:/tmp/g1/w/snfsd-ew:" RUNS=11 VERS="4.2 4.1" FILES="mixed-4d"
bash /work/main/bench/results/stop27/guest_split.sh
