export INST="new:/tmp/g1/w/snfsd-new:;nomap:/tmp/g1/w/snfsd-nomap:" RUNS=11 VERS="4.2 4.1" FILES="data mixed-8d" STATES=warm
bash /work/main/bench/results/stop27/guest_split.sh
