#!/bin/bash
export INST="old:/tmp/g1/w/snfsd-auto::;sb:/tmp/g1/w/snfsd-sb::"
export FILES="mixed-4d mixed-8d hole data" MODES="d128K buf" RUNS=5 SIZE=32
bash /work/main/bench/results/stop25/guest_ab.sh
# zerocopy=auto's choice, logged by each snfsd
grep -h "sendfile\\|read_pieces" /run/*.log
