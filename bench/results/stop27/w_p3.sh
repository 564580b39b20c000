export INST="cur:/tmp/g1/w/snfsd-cur;ew:/tmp/g1/w/snfsd-ew;inl:/tmp/g1/w/snfsd-inl" ROUNDS=5
bash /work/main/bench/results/stop27/guest_ping.sh
