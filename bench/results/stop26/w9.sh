#!/bin/bash
export INST="pf:/tmp/g1/w/snfsd-pf;sc:/tmp/g1/w/snfsd-sc"
export FILES="mixed-32d mixed-8d" RUNS=7 NO_KNFSD=1
bash /work/main/bench/results/stop26/guest_cold.sh
