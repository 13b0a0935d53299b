# SPDX-License-Identifier: Apache-2.0
# `make deb`: roottrace-agent and roottrace-collector .deb files in $(BUILD)/deb, built with
# dpkg-deb from trees staged by `make install-agent|install-collector PREFIX=/usr`.
# The staging tree lives in a temporary directory outside $(BUILD): it holds a directory
# named sysusers.d, which the top-level Makefile's `find $(BUILD) -name '*.d'` would include.
DEB_DIR := $(BUILD)/deb

.PHONY: deb deb-agent deb-collector

deb: deb-agent deb-collector

deb-agent deb-collector: deb-%: $(BUILD)/roottrace-%
	@echo "  DEB     roottrace-$*"
	$(Q)stage=$$(mktemp -d /tmp/roottrace-deb.XXXXXX) && \
	trap 'rm -rf "$$stage"' EXIT && \
	$(MAKE) --no-print-directory install-$* PREFIX=/usr SYSCONFDIR=/etc DESTDIR="$$stage" \
		>/dev/null && \
	packaging/debian/build-deb.sh roottrace-$* "$$stage" $(DEB_DIR) $(VERSION)
