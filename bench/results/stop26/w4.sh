#!/bin/bash
export INST="old:/tmp/g1/w/snfsd-auto::;sb:/tmp/g1/w/snfsd-sb::"
export FILES="data hole" MODES="d4K" RUNS=5 SIZE=8
bash /work/main/bench/results/stop25/guest_ab.sh
# zerocopy=auto's choice, logged by each snfsd
grep -h "sendfile\\|read_pieces" /run/*.log
