# SPDX-License-Identifier: Apache-2.0
# RootTrace: one entry point for build, check, bench, fuzz, install, quickstart.
# Sources are found by directory, so adding a module never needs a Makefile edit:
#   lib/*.c        shared user-space code (pprof, gzip, hash table) -> $(BUILD)/libroottrace.a
#   agent/*.c      agent modules (main.c holds main())         -> $(BUILD)/roottrace-agent
#   collector/     collector modules (cli/main.c holds main())  -> $(BUILD)/roottrace-collector
#   bpf/*.bpf.c    BPF programs -> $(BUILD)/bpf/*.bpf.o -> $(BUILD)/bpf/*.skel.h
#   tests/unit/test-*.c  one test binary each, linked against all three archives
# agent/ has one subfolder per pipeline stage (agent/runtimes/ one more level: one folder per
# runtime) and collector/ one per concern (http/ ingest/ query/ control/ cli/ store/, the
# backends under store/): agent/*/*.c, agent/*/*/*.c, collector/*/*.c and collector/*/*/*.c are
# found the same way.

BUILD ?= build
ARCH ?= x86
V ?= 0
ifeq ($(V),1)
Q :=
else
Q := @
endif

CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
PROTOC_C ?= protoc-c

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.1.0)

WARN := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 $(WARN) -fno-omit-frame-pointer -D_GNU_SOURCE \
	-DROOTTRACE_VERSION=\"$(VERSION)\" \
	-Iinclude -Ilib -I$(BUILD) -I$(BUILD)/bpf -I$(BUILD)/proto -I/usr/include/postgresql
LDFLAGS ?=

LIB_LIBS := -lprotobuf-c -lz -lcrypto
AGENT_LIBS := -lbpf -ldw -lelf -llzma -ldebuginfod -lcurl -ljansson -lmicrohttpd -lstdc++ -lpthread $(LIB_LIBS)
COLLECTOR_LIBS := -ldw -lelf -ldebuginfod -lmicrohttpd -ljansson -lsqlite3 -lpq -lcurl -lpthread -lm $(LIB_LIBS)
TEST_LIBS := $(sort $(AGENT_LIBS) $(COLLECTOR_LIBS)) -lm

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.skel.h,$(BPF_SRCS))

PROTO_SRCS := $(wildcard proto/*.proto)
PROTO_C := $(patsubst proto/%.proto,$(BUILD)/proto/%.pb-c.c,$(PROTO_SRCS))
PROTO_H := $(PROTO_C:.c=.h)
PROTO_OBJS := $(PROTO_C:.c=.o)

LIB_SRCS := $(wildcard lib/*.c)
LIB_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRCS)) $(PROTO_OBJS)
# An agent header is included by its path from agent/ ("sampling/window.h"), a collector header
# by its path from collector/ ("store/store.h"); lib/ and include/ headers by their bare names.
CFLAGS += -Iagent
AGENT_SRCS := $(filter-out agent/main.c,$(wildcard agent/*.c agent/*/*.c agent/*/*/*.c))
AGENT_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(AGENT_SRCS))
COLLECTOR_SRCS := $(filter-out collector/cli/main.c,\
	$(wildcard collector/*.c collector/*/*.c collector/*/*/*.c))
COLLECTOR_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(COLLECTOR_SRCS))

UNIT_SRCS := $(wildcard tests/unit/test-*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
HELPER_SRCS := $(wildcard tests/helpers/*.c)
HELPER_BINS := $(patsubst tests/helpers/%.c,$(BUILD)/tests/helpers/%,$(HELPER_SRCS))

AGENT_BIN := $(BUILD)/roottrace-agent
COLLECTOR_BIN := $(BUILD)/roottrace-collector

.PHONY: all agent collector deps check check-quick check-fleet unit bench fuzz vmlinux clean install \
	quickstart deb format format-check
.DELETE_ON_ERROR:
# Keep generated skeletons and protobuf-c sources between builds.
.SECONDARY:

all: $(AGENT_BIN) $(COLLECTOR_BIN) $(UNIT_BINS) $(HELPER_BINS)
agent: $(AGENT_BIN)
collector: $(COLLECTOR_BIN)

deps:
	$(Q)./scripts/install-deps.sh

# --- BPF: .bpf.c -> .bpf.o -> .skel.h ------------------------------------------------------
$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard include/*.h bpf/*.h) vmlinux/$(ARCH)/vmlinux.h
	@mkdir -p $(@D)
	@echo "  BPF     $@"
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
		-Ivmlinux/$(ARCH) -Iinclude -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	@echo "  SKEL    $@"
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# --- protobuf-c ----------------------------------------------------------------------------
$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(@D)
	@echo "  PROTOC  $<"
	$(Q)$(PROTOC_C) --proto_path=proto --c_out=$(BUILD)/proto $<

$(BUILD)/proto/%.pb-c.o: $(BUILD)/proto/%.pb-c.c
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) -Wno-error -c $< -o $@

# --- user space ----------------------------------------------------------------------------
# The generated headers are order-only: on a fresh tree they are made before anything is
# compiled, but a change to one rebuilds only the objects whose depfile (-MMD) names it.
# A collector header is included by its path from collector/ ("store/store.h"): collector/ comes
# first on the path of the collector's objects and of the tests, benchmarks and fuzzers that
# include its headers, so a folder of the same name elsewhere never shadows one of its own.
$(BUILD)/collector/%.o $(BUILD)/tests/%.o $(BUILD)/bench/%.o: INC_FIRST := -Icollector
$(BUILD)/%.o: %.c | $(SKELS) $(PROTO_H)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(INC_FIRST) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libroottrace.a: $(LIB_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^
$(BUILD)/libagent.a: $(AGENT_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^
$(BUILD)/libcollector.a: $(COLLECTOR_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

$(AGENT_BIN): $(BUILD)/agent/main.o $(BUILD)/libagent.a $(BUILD)/libroottrace.a
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(AGENT_LIBS) -o $@

$(COLLECTOR_BIN): $(BUILD)/collector/cli/main.o $(BUILD)/libcollector.a $(BUILD)/libroottrace.a
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(COLLECTOR_LIBS) -o $@

$(BUILD)/tests/test-%: $(BUILD)/tests/unit/test-%.o $(BUILD)/libagent.a $(BUILD)/libcollector.a $(BUILD)/libroottrace.a
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(TEST_LIBS) -o $@

# Test helper programs (workloads, fixtures); built with frame pointers, linked plainly.
$(BUILD)/tests/helpers/%: tests/helpers/%.c $(wildcard tests/helpers/*.h)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread $< -o $@ -lm

# --- entry points --------------------------------------------------------------------------
unit: $(UNIT_BINS)
	$(Q)./tests/run-tests.sh --build $(BUILD) --only unit

check: deps
	$(Q)$(MAKE) --no-print-directory format-check
	$(Q)$(MAKE) --no-print-directory all node-sdk
	$(Q)./tests/run-tests.sh --build $(BUILD)

# The edit-test loop: the format check, the build, the unit and integration suites. No BPF, fleet
# (PostgreSQL + ClickHouse), end-to-end, sanitizer or fuzzing pass: CI runs `make check`.
check-quick:
	$(Q)$(MAKE) --no-print-directory format-check
	$(Q)$(MAKE) --no-print-directory all node-sdk
	$(Q)./tests/run-tests.sh --build $(BUILD) --only unit
	$(Q)./tests/run-tests.sh --build $(BUILD) --only integration

# Every fleet suite again on a ClickHouse cluster of two shards (ZooKeeper + two servers): longer
# than make check, which runs the representative cluster suites (test_fleet_cluster.py,
# test_fleet_replicas.py) only. node-sdk: test_profile_lines has a Node.js SDK case.
check-fleet: deps all node-sdk
	$(Q)./tests/run-tests.sh --build $(BUILD) --only fleet-cluster

bench: deps all
	$(Q)./bench/run-bench.sh --build $(BUILD)

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux.h

# Every C file in the committed style (.clang-format; Debian 12's clang-format 14). Outside a
# git checkout the sources are found on disk.
FORMAT_FILES = $(shell { git ls-files '*.c' '*.h' 2>/dev/null || \
	find agent bpf collector include lib tests bench demo -name '*.[ch]'; } | grep -v '^vmlinux/')

format:
	clang-format -i $(FORMAT_FILES)

format-check:
	@echo "  FORMAT  $(words $(FORMAT_FILES)) files"
	$(Q)clang-format --dry-run --Werror $(FORMAT_FILES) || \
		{ echo "format-check: run 'make format' (clang-format $(shell clang-format --version 2>/dev/null | grep -o '[0-9][0-9.]*' | head -1))" >&2; exit 1; }

clean:
	rm -rf $(BUILD)

-include $(wildcard mk/*.mk)
-include $(shell find $(BUILD) -type f -name '*.d' 2>/dev/null)
