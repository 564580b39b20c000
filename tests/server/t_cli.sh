#!/bin/bash
# snfsd command line, exports errors, SIGHUP reload, state dir and clean
# SIGTERM shutdown (run against the ASan build: no sanitizer reports).
. "$(dirname "$0")/../lib.sh"
MCLI="python3 $ROOT/tests/server/mountcli.py"
scratch

# --help / --version / usage errors
out=$("$SNFSD" --help 2>&1)
check "--help exits 0" test $? = 0
check "--help mentions -e" grep -q -- '-e, --export DIR' <<<"$out"
ver=$("$SNFSD" --version)
check "--version exits 0" test $? = 0
check "--version prints the version" grep -q '^snfsd [0-9]' <<<"$ver"
"$SNFSD" -s "$T_DIR/state" >"$T_DIR/noexp.out" 2>&1
check_eq "no export: exit 2" 2 $?
check "no export: says so" grep -q 'nothing to export' "$T_DIR/noexp.out"
"$SNFSD" -p 99999 -e /tmp >/dev/null 2>&1
check_eq "bad port: exit 2" 2 $?
"$SNFSD" --cpus 3-1 -e /tmp >"$T_DIR/cpus.out" 2>&1
check_eq "bad CPU list: exit 2" 2 $?
check "bad CPU list: says so" grep -qF "bad CPU list '3-1'" "$T_DIR/cpus.out"

# A bad exports file is refused with file:line.
mkdir -p "$T_DIR/a" "$T_DIR/b"
printf '# exports\n%s/a *(rw,insecure)\n%s/b *(rw,frobnicate)\n' "$T_DIR" "$T_DIR" >"$T_DIR/bad"
"$SNFSD" -f "$T_DIR/bad" -s "$T_DIR/state" --no-portmap -p 0 >"$T_DIR/bad.out" 2>&1
check_eq "bad exports: exit 1" 1 $?
check "bad exports: snfsd: FILE:LINE: reason" \
	grep -qF "snfsd: $T_DIR/bad:3: unknown option 'frobnicate'" "$T_DIR/bad.out"
printf '%s/file\n' "$T_DIR" >"$T_DIR/bad2"
touch "$T_DIR/file"
"$SNFSD" -f "$T_DIR/bad2" -s "$T_DIR/state" --no-portmap -p 0 >"$T_DIR/bad2.out" 2>&1
check "not a directory: file:line" grep -qF "$T_DIR/bad2:1: $T_DIR/file: not a directory" "$T_DIR/bad2.out"

# Start with one export, then reload with two.
printf '%s/a 127.0.0.1(rw,insecure)\n' "$T_DIR" >"$T_DIR/exports"
PORT=$(free_port)
if ! snfsd_start "$PORT" -f "$T_DIR/exports" --no-portmap; then
	notok "snfsd starts"
	cat "$T_DIR/snfsd.log" >&2
	exit 1
fi
ok "snfsd starts"
check "start line logged" grep -q "listening on 127.0.0.1 port $PORT" "$T_DIR/snfsd.log"
check "export logged" grep -qF "export $T_DIR/a fsid=" "$T_DIR/snfsd.log"

check_eq "EXPORT lists one export" "$T_DIR/a 127.0.0.1" "$($MCLI 127.0.0.1 "$PORT" export)"
check_eq "EXPORT over UDP" "$T_DIR/a 127.0.0.1" "$($MCLI --udp 127.0.0.1 "$PORT" export)"
mnt=$($MCLI 127.0.0.1 "$PORT" mnt "$T_DIR/a")
check "MNT ok with AUTH_SYS flavor" grep -qE '^0 [0-9a-f]+ 1$' <<<"$mnt"
check_eq "MNT unexported: ACCES" 13 "$($MCLI 127.0.0.1 "$PORT" mnt "$T_DIR/b")"
check_eq "DUMP" "127.0.0.1 $T_DIR/a" "$($MCLI 127.0.0.1 "$PORT" dump)"
if command -v showmount >/dev/null && (exec 3<>/dev/tcp/127.0.0.1/111) 2>/dev/null; then
	ok "# portmapper present; showmount not used (snfsd runs with --no-portmap)"
fi

# Keep a connection open across the reload: it must survive.
exec 5<>/dev/tcp/127.0.0.1/"$PORT"

printf '%s/a 127.0.0.1(rw,insecure)\n%s/b \\\n  *(ro,insecure)\n' "$T_DIR" "$T_DIR" >"$T_DIR/exports"
kill -HUP "$SNFSD_PID"
for i in $(seq 50); do
	grep -q 'exports reloaded' "$T_DIR/snfsd.log" && break
	sleep 0.1
done
check "SIGHUP: reload logged" grep -q 'exports reloaded: 2 exports' "$T_DIR/snfsd.log"
check_eq "SIGHUP: EXPORT lists the new export" \
	"$(printf '%s/a 127.0.0.1\n%s/b *' "$T_DIR" "$T_DIR")" \
	"$($MCLI 127.0.0.1 "$PORT" export)"
mnt2=$($MCLI 127.0.0.1 "$PORT" mnt "$T_DIR/a")
check_eq "handles survive the reload (same fsid)" "$mnt" "$mnt2"
check "MNT new export" grep -qE '^0 ' <<<"$($MCLI 127.0.0.1 "$PORT" mnt "$T_DIR/b")"

# A broken file on SIGHUP keeps the old table.
printf '%s/a *(rw,nonsense)\n' "$T_DIR" >"$T_DIR/exports"
kill -HUP "$SNFSD_PID"
for i in $(seq 50); do
	grep -q 'reload failed' "$T_DIR/snfsd.log" && break
	sleep 0.1
done
check "bad reload logged with file:line" grep -qF "reload failed, keeping the current exports: $T_DIR/exports:1: unknown option 'nonsense'" "$T_DIR/snfsd.log"
check "bad reload: server alive" snfsd_alive
check_eq "bad reload: old exports kept" \
	"$(printf '%s/a 127.0.0.1\n%s/b *' "$T_DIR" "$T_DIR")" \
	"$($MCLI 127.0.0.1 "$PORT" export)"

# The connection opened before the reloads still works: send a MOUNT NULL
# call on it and read the 28-byte reply (4 mark + 24 header).
printf '\x80\x00\x00\x28\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x02\x00\x01\x86\xa5\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >&5
reply=$(timeout 5 head -c 28 <&5 | od -An -tx1 | tr -d ' \n')
check_eq "connection kept across SIGHUP" "80000018000000070000000100000000000000000000000000000000" "$reply"
exec 5>&-

# State: key file 0600, 16 bytes, kept across restarts; verifier changes.
check_eq "fh.key mode 600" 600 "$(stat -c %a "$T_DIR/state/fh.key")"
check_eq "fh.key 16 bytes" 16 "$(stat -c %s "$T_DIR/state/fh.key")"
check_eq "state dir mode 700" 700 "$(stat -c %a "$T_DIR/state")"
key1=$(od -An -tx1 "$T_DIR/state/fh.key")
verf1=$(od -An -tx1 "$T_DIR/state/write.verf")

snfsd_stop TERM
check_eq "SIGTERM: exit 0" 0 $?
check_no_sanitizer_reports "first run"

printf '%s/a 127.0.0.1(rw,insecure)\n' "$T_DIR" >"$T_DIR/exports"
PORT=$(free_port)
if snfsd_start "$PORT" -f "$T_DIR/exports" -e "$T_DIR/b:ro" --no-portmap -t 2; then
	ok "restart"
	check_eq "key kept across restarts" "$key1" "$(od -An -tx1 "$T_DIR/state/fh.key")"
	check "write verifier differs from the last start" test "$verf1" != "$(od -An -tx1 "$T_DIR/state/write.verf")"
	check_eq "handle valid across restarts" "$mnt" "$($MCLI 127.0.0.1 "$PORT" mnt "$T_DIR/a")"
	check_eq "-e and -f together" "$(printf '%s/a 127.0.0.1\n%s/b *' "$T_DIR" "$T_DIR")" "$($MCLI 127.0.0.1 "$PORT" export)"
	check_eq "no --cpus: threads on every CPU" "$(grep Cpus_allowed_list /proc/self/status | cut -f2)" \
		"$(grep -h Cpus_allowed_list /proc/"$SNFSD_PID"/task/*/status | sort -u | cut -f2)"
	snfsd_stop INT
	check_eq "SIGINT: exit 0" 0 $?
else
	notok "restart"
fi
check_no_sanitizer_reports "second run"

# --cpus binds every thread (the workers, the loop's, the watcher's) to
# the list; a CPU this machine does not have is refused at start.
PORT=$(free_port)
cpu=$(cut -d, -f1 </sys/devices/system/cpu/online | cut -d- -f1)
if snfsd_start "$PORT" -e "$T_DIR/a" --no-portmap -t 3 --cpus "$cpu"; then
	ok "start with --cpus $cpu"
	check "--cpus logged" grep -q "3 threads on CPUs $cpu," "$T_DIR/snfsd.log"
	check "several threads" test "$(ls /proc/"$SNFSD_PID"/task | wc -l)" -ge 4
	check_eq "--cpus $cpu: every thread on CPU $cpu" "$cpu" \
		"$(grep -h Cpus_allowed_list /proc/"$SNFSD_PID"/task/*/status | sort -u | cut -f2)"
	check_eq "a call answered" "$T_DIR/a *" "$($MCLI 127.0.0.1 "$PORT" export)"
	snfsd_stop TERM
	check_eq "--cpus: SIGTERM exit 0" 0 $?
else
	notok "start with --cpus $cpu"
fi
"$SNFSD" --cpus 1023 -e "$T_DIR/a" -s "$T_DIR/state" --no-portmap -p 0 >"$T_DIR/cpus2.out" 2>&1
check_eq "--cpus of a CPU not here: exit 1" 1 $?
check "--cpus of a CPU not here: says so" grep -qF "cannot run on CPUs 1023" "$T_DIR/cpus2.out"
check_no_sanitizer_reports "--cpus runs"
exit $((T_FAILS > 0))
