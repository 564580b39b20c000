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
LIB_DIRS := src/xdr src/rpc src/util src/backend src/server src/server/nfs3 src/server/nfs4 src/server/mount
LIB_SRCS := $(filter-out %/main.c,$(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
SNFSD_MAIN := src/server/main.c

TEST_SRCS := $(shell find tests -name 'test_*.c' 2>/dev/null | sort)
TEST_BINS := $(patsubst %.c,$(B)/%,$(TEST_SRCS))
TEST_BINS_ASAN := $(patsubst %.c,$(A)/%,$(TEST_SRCS))

.PHONY: all asan run check install clean format deps deps-test bench
all: $(B)/snfsd $(TEST_BINS)
asan: $(A)/snfsd $(TEST_BINS_ASAN)

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

install: $(B)/snfsd
	install -D -m 755 $(B)/snfsd $(DESTDIR)$(PREFIX)/sbin/snfsd
	install -D -m 644 doc/snfsd.8 $(DESTDIR)$(PREFIX)/share/man/man8/snfsd.8
	install -D -m 644 dist/snfsd.service $(DESTDIR)$(PREFIX)/lib/systemd/system/snfsd.service
	sed -i 's|@PREFIX@|$(PREFIX)|g' $(DESTDIR)$(PREFIX)/lib/systemd/system/snfsd.service

format:
	clang-format -i $$(find src tests include -name '*.[ch]')

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)

bench: deps $(B)/snfsd
	bench/part1.sh
