export INST="old:/tmp/g1/w/snfsd-old:;new:/tmp/g1/w/snfsd-new:" RUNS=9 VERS="4.2 4.1" FILES="mixed-4d mixed-32d data" STATES=warm
bash /work/main/bench/results/stop27/guest_split.sh
