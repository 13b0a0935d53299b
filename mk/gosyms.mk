# SPDX-License-Identifier: Apache-2.0
# Go name-table benchmark (bench/bench-gosyms.sh), linked against the agent's modules.
$(BUILD)/bench/bench-gosyms: bench/bench_gosyms.c $(BUILD)/libagent.a $(BUILD)/libroottrace.a
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $^ $(AGENT_LIBS) -o $@
