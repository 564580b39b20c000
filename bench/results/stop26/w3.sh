#!/bin/bash
B=/tmp/g1/w/snfsd-auto
export INST="h4:$B::readplus_min_hole=4096;h8:$B::readplus_min_hole=8192;h16:$B::readplus_min_hole=16384;h64:$B::readplus_min_hole=65536"
export FILES="mixed-4d mixed-8d mixed-32d" MODES="d128K buf" RUNS=5 SIZE=32
bash /work/main/bench/results/stop25/guest_ab.sh
# zerocopy=auto's choice, logged by each snfsd
grep -h "sendfile\\|read_pieces" /run/*.log
