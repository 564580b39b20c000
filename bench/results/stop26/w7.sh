#!/bin/bash
export INST="old:/tmp/g1/w/snfsd-auto;sb:/tmp/g1/w/snfsd-sb"
bash /work/main/bench/results/stop26/guest_cold.sh
