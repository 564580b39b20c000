export INST="new:/tmp/g1/w/snfsd-new:;trail:/tmp/g1/w/snfsd-trail:;mh64:/tmp/g1/w/snfsd-new:readplus_min_hole=65536" RUNS=9 VERS="4.2 4.1" FILES="mixed-4d mixed-8d mixed-32d" STATES=warm
bash /work/main/bench/results/stop27/guest_split.sh
