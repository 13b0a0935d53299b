# SPDX-License-Identifier: Apache-2.0
# Go name-table benchmark (bench/bench-gosyms.sh), linked against the agent's modules.
# Also the Go unwind-table benchmark (bench-go-rows).
$(BUILD)/bench/bench-gosyms: bench/bench_gosyms.c $(BUILD)/libagent.a $(BUILD)/libroottrace.a
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $^ $(AGENT_LIBS) -o $@

# Go unwind-table benchmark (bench/bench-gosyms.sh runs it on the same binaries).
$(BUILD)/bench/bench-go-rows: bench/bench_go_rows.c $(BUILD)/libagent.a $(BUILD)/libroottrace.a
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $^ $(AGENT_LIBS) -o $@
