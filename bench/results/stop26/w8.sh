#!/bin/bash
export INST="sb4:/tmp/g1/w/snfsd-sb:readplus_min_hole=4096;pf4:/tmp/g1/w/snfsd-pf:readplus_min_hole=4096;pf:/tmp/g1/w/snfsd-pf:"
export FILES="mixed-4d mixed-32d" RUNS=5
bash /work/main/bench/results/stop26/guest_cold.sh
