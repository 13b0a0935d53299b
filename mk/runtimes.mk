# SPDX-License-Identifier: Apache-2.0
# Runtime detection benchmark (bench/bench-runtime-detect.sh), linked against the agent's modules.
$(BUILD)/bench/bench-runtime-detect: bench/bench_runtime_detect.c $(BUILD)/libagent.a $(BUILD)/libroottrace.a
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $^ $(AGENT_LIBS) -o $@
