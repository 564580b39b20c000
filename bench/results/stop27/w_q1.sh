export INST="ew:/tmp/g1/w/snfsd-ew" ROUNDS=5 PERF=1
bash /work/main/bench/results/stop27/guest_pin.sh
