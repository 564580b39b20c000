/* URL parsing (libnfs form) and export selection. */
#include <string.h>

#include "client/mount3.h"
#include "snfs/snfs.h"
#include "test.h"

int main(void)
{
	struct snfs_url u;

	CHECK(snfs_url_parse("nfs://h/export/dir/f?version=3&uid=5&gid=6",
	                     &u) == 0,
	      "basic URL parses");
	CHECK(!strcmp(u.host, "h") && !strcmp(u.path, "/export/dir/f"),
	      "host and path");
	CHECK(u.version == SNFS_V3 && u.uid == 5 && u.gid == 6 && u.uid_given,
	      "version uid gid");
	CHECK(u.port == 0 && u.nfsport == 0, "no port");
	snfs_url_free(&u);

	CHECK(snfs_url_parse("nfs://127.0.0.1:2050/e?version=4.2&rsize=64k"
	                     "&wsize=1M&readdir-buffer=1048576",
	                     &u) == 0,
	      "port and sizes parse");
	CHECK(u.port == 2050 && u.nfsport == 2050, "port sets nfsport");
	CHECK(u.version == SNFS_V42, "version 4.2");
	CHECK(u.rsize == 65536 && u.wsize == 1048576 &&
	          u.readdir_buffer == 1048576,
	      "rsize wsize readdir-buffer");
	snfs_url_free(&u);

	CHECK(snfs_url_parse("nfs://[::1]:111/x?version=4.1&nfsport=2049&"
	                     "mountport=20048&cache=64M&timeout=5",
	                     &u) == 0,
	      "v6 host, libnfs ports");
	CHECK(!strcmp(u.host, "::1") && u.port == 111 && u.nfsport == 2049 &&
	          u.mountport == 20048,
	      "nfsport overrides the URL port");
	CHECK(u.version == SNFS_V41 && u.cache_size == (64u << 20) &&
	          u.timeout_ms == 5000,
	      "minor version, cache, timeout");
	snfs_url_free(&u);

	CHECK(snfs_url_parse("nfs://h/a%20b/c%2fd", &u) == 0 &&
	          !strcmp(u.path, "/a b/c/d"),
	      "percent decoding");
	snfs_url_free(&u);
	CHECK(snfs_url_parse("nfs://h", &u) == 0 && !strcmp(u.path, "/"),
	      "empty path is /");
	snfs_url_free(&u);
	CHECK(snfs_url_parse("nfs://h/x?readahead=1&debug=2", &u) == 0,
	      "libnfs-only arguments are accepted");
	snfs_url_free(&u);

	CHECK(snfs_url_parse("http://h/x", &u) < 0, "wrong scheme refused");
	CHECK(snfs_url_parse("nfs:///x", &u) < 0, "missing host refused");
	CHECK(snfs_url_parse("nfs://h:0/x", &u) < 0, "port 0 refused");
	CHECK(snfs_url_parse("nfs://h:99999/x", &u) < 0, "port too big");
	CHECK(snfs_url_parse("nfs://h/x?version=5", &u) < 0, "bad version");
	CHECK(snfs_url_parse("nfs://h/x?bogus=1", &u) < 0,
	      "unknown argument refused");
	CHECK(strstr(snfs_last_error(), "bogus") != NULL,
	      "error message names the argument");
	CHECK(snfs_url_parse("nfs://h/x?uid", &u) < 0,
	      "argument without value");
	CHECK(snfs_url_parse("nfs://h/a%00b", &u) < 0, "NUL in path refused");
	CHECK(snfs_url_parse("nfs://[::1/x", &u) < 0, "unclosed v6 bracket");
	CHECK(snfs_url_parse("nfs://h/x?readdir-buffer=2M", &u) < 0,
	      "readdir buffer above 1 MiB refused");

	char *ex[] = {"/", "/export", "/export/sub", "/exp"};
	CHECK(
	    !strcmp(mount3_pick_export("/export/sub/f", ex, 4), "/export/sub"),
	    "longest export prefix wins");
	CHECK(!strcmp(mount3_pick_export("/export/subx", ex, 4), "/export"),
	      "prefix must end at a component");
	CHECK(!strcmp(mount3_pick_export("/other", ex, 4), "/"),
	      "root export catches the rest");
	CHECK(mount3_pick_export("/other", ex + 1, 3) == NULL, "no match");
	TEST_EXIT();
}
