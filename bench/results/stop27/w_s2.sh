export INST="cur:/tmp/g1/w/snfsd-cur:;ew:/tmp/g1/w/snfsd-ew:" RUNS=7 VERS="4.2"
bash /work/main/bench/results/stop27/guest_split.sh
