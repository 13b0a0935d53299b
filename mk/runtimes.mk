# SPDX-License-Identifier: Apache-2.0
# Runtime detection benchmark (bench/bench-runtime-detect.sh), linked against the agent's modules.
$(BUILD)/bench/bench-runtime-detect: bench/bench_runtime_detect.c $(BUILD)/libagent.a $(BUILD)/libroottrace.a
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $^ $(AGENT_LIBS) -o $@

# LD_AUDIT libraries that hold the loader busy before libruby is mapped (search) or before it
# is relocated (open): tests/bpf/test_ruby.py's process caught while its loader runs.
LOADER_FIXTURES := $(BUILD)/fixtures/libslowld-search.so $(BUILD)/fixtures/libslowld-open.so
all: $(LOADER_FIXTURES)

$(BUILD)/fixtures/libslowld-%.so: tests/fixtures/loader/slow_loader_audit.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) -O1 -fPIC -shared -DSLOW_AT_$(shell echo $* | tr a-z A-Z) $< -o $@
