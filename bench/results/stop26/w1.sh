#!/bin/bash
export INST="def:/tmp/g1/w/snfsd::;zc4:/tmp/g1/w/snfsd::zerocopy,zerocopy_min=4096;zcw:/tmp/g1/w/snfsd::zerocopy,zerocopy_min=4096,readplus_min_hole=1m;map:/tmp/g1/w/snfsd::mapped,mapped_min=4096"
export FILES="mixed-4d data" MODES="d128K buf" RUNS=5 SIZE=32
bash /work/main/bench/results/stop25/guest_ab.sh
