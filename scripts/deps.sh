#!/bin/sh
# Install the Debian packages a step needs, only when one is missing.
set -e
case "$1" in
build) pkgs="gcc make libc6-dev pkg-config libfuse3-dev fuse3" ;;
test) pkgs="libnfs-utils clang libclang-rt-14-dev python3 e2fsprogs xfsprogs btrfs-progs fio sysbench" ;;
*) echo "usage: deps.sh build|test" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
	dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: apt-get install$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing
