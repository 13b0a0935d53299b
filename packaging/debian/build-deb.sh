#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Turns a staged install tree into a .deb with dpkg-deb: DEBIAN/ control (version, arch,
# size, shared-library Depends from dpkg-shlibdeps), maintainer scripts and conffiles.
#   packaging/debian/build-deb.sh PACKAGE STAGE_DIR OUT_DIR VERSION
set -eu

pkg="$1" stage="$2" out="$3" version="$4"
here="$(cd "$(dirname "$0")" && pwd)"
arch="$(dpkg --print-architecture)"

# The stage may come from mktemp (0700): every directory in a package is 0755.
find "$stage" -type d -exec chmod 0755 {} +
# Debian conventions: compressed man pages, no debug info (symbols stay for self-profiling).
find "$stage/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9nf {} +
find "$stage/usr/sbin" -type f -exec strip --strip-debug {} +

depends=""
if command -v dpkg-shlibdeps >/dev/null; then
	# dpkg-shlibdeps wants a debian/control beside it: give it a throwaway one.
	tmp="$(mktemp -d)"
	mkdir "$tmp/debian"
	printf 'Source: roottrace\n\nPackage: %s\nArchitecture: any\n' "$pkg" >"$tmp/debian/control"
	bins="$(find "$stage/usr/sbin" -type f | sed 's/^/-e/' | tr '\n' ' ')"
	# shellcheck disable=SC2086
	depends="$(cd "$tmp" && dpkg-shlibdeps -O $bins 2>/dev/null | sed -n 's/^shlibs:Depends=//p')"
	rm -rf "$tmp"
fi
if [ -z "$depends" ]; then
	echo "build-deb: dpkg-shlibdeps unavailable; Depends lists libc6 only" >&2
	depends="libc6"
fi

mkdir -p "$stage/DEBIAN"
size="$(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$size/" \
	-e "s/@DEPENDS@/$depends/" "$here/$pkg.control" >"$stage/DEBIAN/control"
for script in postinst prerm postrm; do
	if [ -f "$here/$pkg.$script" ]; then
		install -m 0755 "$here/$pkg.$script" "$stage/DEBIAN/$script"
	fi
done
# Everything under /etc is the admin's to edit: dpkg keeps their changes on upgrade.
(cd "$stage" && find etc -type f | sed 's|^|/|' | sort) >"$stage/DEBIAN/conffiles"
[ -s "$stage/DEBIAN/conffiles" ] || rm -f "$stage/DEBIAN/conffiles"

mkdir -p "$out"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out/${pkg}_${version}_${arch}.deb" >/dev/null
echo "$out/${pkg}_${version}_${arch}.deb"
