#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Install the Debian packages that building, testing and benchmarking RootTrace need.
# Idempotent: skips apt entirely when every package is already present.
set -eu

PACKAGES="make gcc g++ clang llvm pkg-config bpftool libbpf-dev libelf-dev libdw-dev \
libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libcurl4-openssl-dev libjansson-dev \
libmicrohttpd-dev libsqlite3-dev sqlite3 libssl-dev golang-go python3 curl procps \
libclang-rt-14-dev openssl python3-yaml dpkg-dev strace clang-format nodejs chromium \
libpq-dev postgresql clickhouse-server clickhouse-client zookeeper faketime \
liblzma-dev libdebuginfod-dev debuginfod elfutils xz-utils binutils python3.11 bpfcc-tools libbpf-tools \
php8.2-cli php8.2-fpm ruby3.1 openjdk-17-jdk-headless"

# npm installs the Node.js SDK the tests run (mk/node.mk); NodeSource's nodejs ships it,
# Debian's comes as its own package.
command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES npm"

missing=""
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done

if [ -z "$missing" ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing; run as root to install them" >&2
	exit 1
fi

echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
