# Sourced by the scripts that run inside the test guest (tools/kvm): the
# result line format the host side parses.
#
# step NAME CMD...: run CMD, print "R|NAME STATUS", and on failure the
# first lines of its output as "G|NAME: ..." lines. Output goes to a file
# per name, so steps may run in parallel.
step() {
	local name=$1 rc
	shift
	"$@" >"/tmp/step.$name" 2>&1
	rc=$?
	echo "R|$name $rc"
	[ "$rc" = 0 ] || sed "s/^/G|$name: /" "/tmp/step.$name" | head -20
	return $rc
}
