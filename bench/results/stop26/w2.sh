#!/bin/bash
export INST="auto:/tmp/g1/w/snfsd-auto::;zcw:/tmp/g1/w/snfsd-auto::zerocopy,zerocopy_min=4096,readplus_min_hole=1m"
export FILES="mixed-4d mixed-4h hole data" MODES="d128K buf" RUNS=5 SIZE=32
bash /work/main/bench/results/stop25/guest_ab.sh
# zerocopy=auto's choice, logged by each snfsd
grep -h "sendfile\\|read_pieces" /run/*.log
