export INST="cur:/tmp/g1/w/snfsd-cur;sb20:/tmp/g1/w/snfsd-sb20;inl:/tmp/g1/w/snfsd-inl" ROUNDS=5
bash /work/main/bench/results/stop27/guest_ping.sh
