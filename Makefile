# snfs: plain Makefile. `make run` starts snfsd on ./export; `make check`
# runs every test (and again under ASan+UBSan); `make install` installs.
CC ?= gcc
PREFIX ?= /usr/local
DESTDIR ?=
CFLAGS_COMMON := -std=c17 -D_GNU_SOURCE -Wall -Wextra -Werror -g -Isrc -Iinclude -Itests -pthread
CFLAGS ?= -O2
ASAN_FLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDLIBS := -pthread

B := build
A := build/asan

# Every .c under these folders belongs to the server library; main.c files
# are the program entry points and stay out of it.
LIB_DIRS := src/xdr src/rpc src/util src/backend src/server src/server/nfs3 src/server/nfs4 src/server/mount src/server/nlm
LIB_SRCS := $(filter-out %/main.c,$(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
SNFSD_MAIN := src/server/main.c

# libsnfs, the client library (and the snfs command built on it): its own
# sources plus the XDR cursors and the logger it shares with the server.
CLIENT_SRCS := $(wildcard src/client/*.c) $(wildcard src/xdr/*.c) src/util/log.c
SNFS_MAIN := src/tools/snfs.c
SNFS_EXTRA := src/tools/snfs_bench.c

TEST_SRCS := $(shell find tests -name 'test_*.c' 2>/dev/null | sort)
TEST_BINS := $(patsubst %.c,$(B)/%,$(TEST_SRCS))
TEST_BINS_ASAN := $(patsubst %.c,$(A)/%,$(TEST_SRCS))

.SECONDARY:
.PHONY: all asan run check install clean format deps deps-test bench bench-sparse bench-client bench-deleg
all: $(B)/snfsd $(B)/libsnfs.a $(B)/snfs $(B)/snfs-mount $(TEST_BINS)
asan: $(A)/snfsd $(A)/libsnfs.a $(A)/snfs $(A)/snfs-mount $(TEST_BINS_ASAN)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -MMD -MP -c $< -o $@
$(A)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(ASAN_FLAGS) -MMD -MP -c $< -o $@

$(B)/libsnfsd.a: $(patsubst %.c,$(B)/%.o,$(LIB_SRCS))
	@rm -f $@; ar rcs $@ $^
$(A)/libsnfsd.a: $(patsubst %.c,$(A)/%.o,$(LIB_SRCS))
	@rm -f $@; ar rcs $@ $^

$(B)/snfsd: $(B)/src/server/main.o $(B)/libsnfsd.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(A)/snfsd: $(A)/src/server/main.o $(A)/libsnfsd.a
	$(CC) $(ASAN_FLAGS) -o $@ $^ $(LDLIBS)

$(B)/libsnfs.a: $(patsubst %.c,$(B)/%.o,$(CLIENT_SRCS))
	@rm -f $@; ar rcs $@ $^
$(A)/libsnfs.a: $(patsubst %.c,$(A)/%.o,$(CLIENT_SRCS))
	@rm -f $@; ar rcs $@ $^

$(B)/snfs: $(B)/src/tools/snfs.o $(patsubst %.c,$(B)/%.o,$(SNFS_EXTRA)) $(B)/libsnfs.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(A)/snfs: $(A)/src/tools/snfs.o $(patsubst %.c,$(A)/%.o,$(SNFS_EXTRA)) $(A)/libsnfs.a
	$(CC) $(ASAN_FLAGS) -o $@ $^ $(LDLIBS)

# snfs-mount (issue 6): FUSE on libsnfs's handle API, with libfuse3.
MOUNT_SRCS := src/tools/snfs-mount.c $(wildcard src/tools/mount_*.c)
FUSE_CFLAGS = $(shell pkg-config --cflags fuse3)
FUSE_LIBS = $(shell pkg-config --libs fuse3)
$(patsubst %.c,$(B)/%.o,$(MOUNT_SRCS)) $(patsubst %.c,$(A)/%.o,$(MOUNT_SRCS)): CFLAGS_COMMON += $(FUSE_CFLAGS)

$(B)/snfs-mount: $(patsubst %.c,$(B)/%.o,$(MOUNT_SRCS)) $(B)/libsnfs.a
	$(CC) $(CFLAGS) -o $@ $^ $(FUSE_LIBS) $(LDLIBS)
$(A)/snfs-mount: $(patsubst %.c,$(A)/%.o,$(MOUNT_SRCS)) $(A)/libsnfs.a
	$(CC) $(ASAN_FLAGS) -o $@ $^ $(FUSE_LIBS) $(LDLIBS)

# tests/faults/kill_writer (t_kill_libsnfs.sh) is a libsnfs client too.
$(B)/tests/faults/kill_writer: $(B)/tests/faults/kill_writer.o $(B)/libsnfs.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(A)/tests/faults/kill_writer: $(A)/tests/faults/kill_writer.o $(A)/libsnfs.a
	$(CC) $(ASAN_FLAGS) -o $@ $^ $(LDLIBS)

# Client tests link the client library, not the server's.
$(B)/tests/client/%: $(B)/tests/client/%.o $(B)/libsnfs.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(A)/tests/client/%: $(A)/tests/client/%.o $(A)/libsnfs.a
	$(CC) $(ASAN_FLAGS) -o $@ $^ $(LDLIBS)

$(B)/tests/%: $(B)/tests/%.o $(B)/libsnfsd.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(A)/tests/%: $(A)/tests/%.o $(A)/libsnfsd.a
	$(CC) $(ASAN_FLAGS) -o $@ $^ $(LDLIBS)

# Debian packages the build and the tests need; installed once.
deps:
	@scripts/deps.sh build
deps-test:
	@scripts/deps.sh test

run: deps $(B)/snfsd
	@mkdir -p export .snfsd-state
	$(B)/snfsd -e $(CURDIR)/export:rw,insecure,no_root_squash -s $(CURDIR)/.snfsd-state -l 127.0.0.1 -p 2049 -v

check: deps deps-test all asan
	@tests/run.sh

install: $(B)/snfsd $(B)/snfs $(B)/snfs-mount $(B)/libsnfs.a
	install -D -m 755 $(B)/snfsd $(DESTDIR)$(PREFIX)/sbin/snfsd
	install -D -m 755 $(B)/snfs $(DESTDIR)$(PREFIX)/bin/snfs
	install -D -m 755 $(B)/snfs-mount $(DESTDIR)$(PREFIX)/bin/snfs-mount
	install -D -m 644 $(B)/libsnfs.a $(DESTDIR)$(PREFIX)/lib/libsnfs.a
	install -D -m 644 include/snfs/snfs.h $(DESTDIR)$(PREFIX)/include/snfs/snfs.h
	install -D -m 644 doc/snfs.1 $(DESTDIR)$(PREFIX)/share/man/man1/snfs.1
	install -D -m 644 doc/snfs-mount.1 $(DESTDIR)$(PREFIX)/share/man/man1/snfs-mount.1
	install -D -m 644 doc/snfsd.8 $(DESTDIR)$(PREFIX)/share/man/man8/snfsd.8
	install -D -m 644 dist/snfsd.service $(DESTDIR)$(PREFIX)/lib/systemd/system/snfsd.service
	sed -i 's|@PREFIX@|$(PREFIX)|g' $(DESTDIR)$(PREFIX)/lib/systemd/system/snfsd.service

format:
	clang-format -i $$(find src tests include -name '*.[ch]')

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)

bench: deps $(B)/snfsd $(B)/snfs-mount
	bench/part1.sh
	bench/sparse.sh
	bench/mount.sh
	bench/client.sh
	bench/deleg.sh

# The client benches alone (bench/client.sh: DIR_ENTRIES, SIZE_MIB,
# BENCH_TIME, VERSIONS, ...; see the script).
bench-client: deps $(B)/snfsd $(B)/snfs
	bench/client.sh

# The READ_PLUS seed matrix alone (bench/sparse.sh: SIZE_MIB, FSES, RUNS...).
bench-sparse: deps $(B)/snfsd $(B)/snfs
	bench/sparse.sh

# Read delegations with the kernel client, snfsd with and without, and
# knfsd, in one guest (bench/deleg.sh: NFILES, PASSES, RUNS).
bench-deleg: deps $(B)/snfsd
	bench/deleg.sh

# ---- fuzzing (tests/fuzz, issue 7): libFuzzer targets built with clang
# from the library sources in LIB_SRCS (server targets) and CLIENT_SRCS
# (fuzz_client_replies), so new source folders are picked up.
# `make fuzz` replays tests/fuzz/regress, then runs each target for
# FUZZ_SECONDS over its committed corpus, keeping new inputs in $(FUZZ_WORK);
# `make check` does the same for 30 s each through tests/fuzz/t_fuzz.sh.
# See tests/fuzz/README.md.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 300
FUZZ_WORK ?= build/fuzz-work
FUZZ_CFLAGS := -std=c17 -D_GNU_SOURCE -Wall -Wextra -g -O1 -Isrc -Iinclude -Itests/fuzz -pthread \
	-fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined
FUZZ_TARGETS := fuzz_record fuzz_rpc fuzz_nfs3_args fuzz_nfs4_compound fuzz_client_replies fuzz_clientrec fuzz_cb_reply
FZ := build/fuzz
FUZZ_BINS := $(addprefix $(FZ)/,$(FUZZ_TARGETS))

$(FZ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
$(FZ)/libsnfsd.a: $(patsubst %.c,$(FZ)/%.o,$(LIB_SRCS))
	@rm -f $@; ar rcs $@ $^
$(FZ)/fuzz_record: $(FZ)/tests/fuzz/fuzz_record.o $(FZ)/libsnfsd.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)
$(FZ)/fuzz_clientrec: $(FZ)/tests/fuzz/fuzz_clientrec.o $(FZ)/libsnfsd.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)
$(FZ)/fuzz_cb_reply: $(FZ)/tests/fuzz/fuzz_cb_reply.o $(FZ)/libsnfsd.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)
# libsnfs, instrumented the same way, for the client reply decoders.
$(FZ)/libsnfs.a: $(patsubst %.c,$(FZ)/%.o,$(CLIENT_SRCS))
	@rm -f $@; ar rcs $@ $^
$(FZ)/fuzz_client_replies: $(FZ)/tests/fuzz/fuzz_client_replies.o $(FZ)/libsnfs.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)
$(FZ)/fuzz_%: $(FZ)/tests/fuzz/fuzz_%.o $(FZ)/tests/fuzz/fuzz_srv.o $(FZ)/libsnfsd.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# Keep the harness objects make would delete as intermediates.
.PRECIOUS: $(FZ)/tests/fuzz/%.o
.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)
fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_WORK=$(FUZZ_WORK) tests/fuzz/fuzz.sh -r $(FUZZ_TARGETS)

# `make -s print-VAR` prints a variable (used by scripts).
print-%:
	@echo $($*)
# ---- end of fuzzing ----
