# SPDX-License-Identifier: Apache-2.0
# `make deb`: roottrace-agent and roottrace-collector .deb files in $(BUILD)/deb, built with
# dpkg-deb from trees staged by `make install-agent|install-collector PREFIX=/usr`.
DEB_DIR := $(BUILD)/deb
DEB_PKGS := roottrace-agent roottrace-collector

.PHONY: deb deb-agent deb-collector

deb: deb-agent deb-collector

deb-agent deb-collector: deb-%: $(BUILD)/roottrace-%
	$(Q)rm -rf $(DEB_DIR)/stage-roottrace-$*
	$(Q)$(MAKE) --no-print-directory install-$* PREFIX=/usr SYSCONFDIR=/etc \
		DESTDIR=$(abspath $(DEB_DIR))/stage-roottrace-$* >/dev/null
	@echo "  DEB     roottrace-$*"
	$(Q)packaging/debian/build-deb.sh roottrace-$* $(DEB_DIR)/stage-roottrace-$* $(DEB_DIR) \
		$(VERSION)
