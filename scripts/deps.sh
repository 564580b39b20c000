#!/bin/sh
# Install the Debian packages a step needs, only when one is missing.
set -e
case "$1" in
build) pkgs="gcc make libc6-dev pkg-config libfuse3-dev fuse3" ;;
test) pkgs="libnfs-utils clang libclang-rt-14-dev python3 e2fsprogs xfsprogs btrfs-progs fio sysbench rpcbind nfs-common iproute2 groff-base man-db" ;;
*) echo "usage: deps.sh build|test" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
	dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: apt-get install$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# No daemon the packages bring may start on the host: rpcbind on port 111
# would change what the suites see there (t_rpcbind.sh runs its own in a
# private namespace). Where no policy-rc.d says so already, one does while
# installing.
policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
	policy=/usr/sbin/policy-rc.d
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	trap 'rm -f "$policy"' EXIT
fi
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing
