# SPDX-License-Identifier: Apache-2.0
# `make install [DESTDIR=/stage] [PREFIX=/usr/local]`: binaries, man pages, systemd units,
# sysusers.d entries and default config (kept when already present). mk/deb.mk stages each
# package with install-agent / install-collector and PREFIX=/usr.
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
# systemd reads units from /lib/systemd/system (distribution) and /usr/local/lib/systemd/system.
UNITDIR ?= $(if $(filter /usr,$(PREFIX)),/lib/systemd/system,$(PREFIX)/lib/systemd/system)
SYSUSERSDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/sysusers.d,$(PREFIX)/lib/sysusers.d)
INSTALL ?= install

# $(call install_unit,NAME): the unit with its paths rewritten for SBINDIR and SYSCONFDIR.
define install_unit
	$(Q)$(INSTALL) -d $(DESTDIR)$(UNITDIR)
	$(Q)sed -e 's|/usr/sbin/|$(SBINDIR)/|g' -e 's|/etc/roottrace/|$(SYSCONFDIR)/roottrace/|g' \
		packaging/systemd/$(1).service > $(DESTDIR)$(UNITDIR)/$(1).service
	$(Q)chmod 0644 $(DESTDIR)$(UNITDIR)/$(1).service
endef

# $(call install_conf,SRC,NAME,MODE): default config, never overwriting the admin's edits.
define install_conf
	$(Q)$(INSTALL) -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/roottrace
	$(Q)if [ -e $(DESTDIR)$(SYSCONFDIR)/roottrace/$(2) ]; then \
		echo "  KEEP    $(DESTDIR)$(SYSCONFDIR)/roottrace/$(2)"; \
	else \
		$(INSTALL) -m $(3) $(1) $(DESTDIR)$(SYSCONFDIR)/roottrace/$(2); \
	fi
endef

.PHONY: install-agent install-collector install-postinstall

install: install-agent install-collector
	$(Q)$(MAKE) --no-print-directory install-postinstall

install-agent: $(AGENT_BIN)
	@echo "  INSTALL roottrace-agent -> $(DESTDIR)$(SBINDIR)"
	$(Q)$(INSTALL) -D -m 0755 $(AGENT_BIN) $(DESTDIR)$(SBINDIR)/roottrace-agent
	$(Q)$(INSTALL) -D -m 0644 docs/man/roottrace-agent.8 $(DESTDIR)$(MANDIR)/man8/roottrace-agent.8
	$(call install_unit,roottrace-agent)
	$(Q)$(INSTALL) -D -m 0644 packaging/etc/sysusers-roottrace-agent.conf \
		$(DESTDIR)$(SYSUSERSDIR)/roottrace-agent.conf
	$(call install_conf,packaging/etc/agent.env,agent.env,0644)
	$(call install_conf,packaging/etc/agent.json,agent.json,0644)

install-collector: $(COLLECTOR_BIN)
	@echo "  INSTALL roottrace-collector -> $(DESTDIR)$(SBINDIR)"
	$(Q)$(INSTALL) -D -m 0755 $(COLLECTOR_BIN) $(DESTDIR)$(SBINDIR)/roottrace-collector
	$(Q)$(INSTALL) -D -m 0644 docs/man/roottrace-collector.8 \
		$(DESTDIR)$(MANDIR)/man8/roottrace-collector.8
	$(call install_unit,roottrace-collector)
	$(Q)$(INSTALL) -D -m 0644 packaging/etc/sysusers-roottrace-collector.conf \
		$(DESTDIR)$(SYSUSERSDIR)/roottrace-collector.conf
	$(call install_conf,packaging/etc/collector.env,collector.env,0644)

# On the live system only (no DESTDIR): create the service users and the empty 0600 token
# file, reload systemd, and say what is left to do.
install-postinstall:
	$(Q)if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" -eq 0 ]; then \
		if command -v systemd-sysusers >/dev/null; then \
			systemd-sysusers $(SYSUSERSDIR)/roottrace-agent.conf \
				$(SYSUSERSDIR)/roottrace-collector.conf; \
		fi; \
		[ -e $(SYSCONFDIR)/roottrace/agent-token ] || \
			$(INSTALL) -m 0600 /dev/null $(SYSCONFDIR)/roottrace/agent-token; \
		[ -d /run/systemd/system ] && systemctl daemon-reload || true; \
		echo "installed. Next: systemctl enable --now roottrace-collector; write a collector"; \
		echo "token to $(SYSCONFDIR)/roottrace/agent-token; systemctl enable --now roottrace-agent"; \
		echo "(docs/operations.md, \"Install\")"; \
	fi
