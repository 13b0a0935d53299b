// SPDX-License-Identifier: Apache-2.0
/* GNU build-id from an fd: PT_NOTE segments first (where linkers put .note.gnu.build-id),
 * then SHT_NOTE sections (separate debug files); ELF32 and ELF64 of the host's byte order. */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/build_id.h"

#define NOTES_MAX (64u << 10) /* a note area larger than this is not read */
#define HEADERS_MAX 256	      /* program or section headers looked at */
#define GNU_NAME "GNU"

/* One note area (a segment's or a section's): the file range that holds notes. */
struct note_area {
	uint64_t offset, size;
};

static int read_at(int fd, void *buf, size_t len, uint64_t offset)
{
	ssize_t n = pread(fd, buf, len, (off_t)offset);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static size_t align4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

static void to_hex(const unsigned char *id, size_t n, char *ret_hex)
{
	for (size_t i = 0; i < n; i++)
		sprintf(ret_hex + 2 * i, "%02x", id[i]);
	ret_hex[2 * n] = '\0';
}

/* Looks for NT_GNU_BUILD_ID in one note area. true when found (ret_hex filled). */
static bool find_in_notes(int fd, const struct note_area *a, char *ret_hex, size_t len)
{
	size_t size = a->size < NOTES_MAX ? (size_t)a->size : NOTES_MAX, pos = 0;
	unsigned char *buf = malloc(size ? size : 1);
	bool found = false;

	if (!buf || read_at(fd, buf, size, a->offset)) {
		free(buf);
		return false;
	}
	while (pos + sizeof(Elf64_Nhdr) <= size) {
		Elf64_Nhdr nh; /* the same layout as Elf32_Nhdr */
		size_t name_at = pos + sizeof(nh), desc_at;

		memcpy(&nh, buf + pos, sizeof(nh));
		desc_at = name_at + align4(nh.n_namesz);
		if (nh.n_namesz > size || nh.n_descsz > size || desc_at + nh.n_descsz > size)
			break;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof(GNU_NAME) &&
		    !memcmp(buf + name_at, GNU_NAME, sizeof(GNU_NAME))) {
			found = nh.n_descsz && 2 * nh.n_descsz + 1 <= len;
			if (found)
				to_hex(buf + desc_at, nh.n_descsz, ret_hex);
			break;
		}
		pos = desc_at + align4(nh.n_descsz);
	}
	free(buf);
	return found;
}

/* The note areas of the file: its PT_NOTE segments, else its SHT_NOTE sections. */
static size_t note_areas(int fd, const unsigned char *ident, struct note_area *ret, size_t max)
{
	bool is64 = ident[EI_CLASS] == ELFCLASS64;
	Elf64_Ehdr eh64;
	Elf32_Ehdr eh32;
	uint64_t phoff, shoff;
	unsigned phnum, shnum, phentsize, shentsize;
	size_t n = 0;

	if (is64 ? read_at(fd, &eh64, sizeof(eh64), 0) : read_at(fd, &eh32, sizeof(eh32), 0))
		return 0;
	phoff = is64 ? eh64.e_phoff : eh32.e_phoff;
	phnum = is64 ? eh64.e_phnum : eh32.e_phnum;
	phentsize = is64 ? eh64.e_phentsize : eh32.e_phentsize;
	shoff = is64 ? eh64.e_shoff : eh32.e_shoff;
	shnum = is64 ? eh64.e_shnum : eh32.e_shnum;
	shentsize = is64 ? eh64.e_shentsize : eh32.e_shentsize;
	for (unsigned i = 0; i < phnum && i < HEADERS_MAX && n < max; i++) {
		Elf64_Phdr p64;
		Elf32_Phdr p32;
		uint64_t at = phoff + (uint64_t)i * phentsize;

		if (is64 ? read_at(fd, &p64, sizeof(p64), at) : read_at(fd, &p32, sizeof(p32), at))
			break;
		if ((is64 ? p64.p_type : p32.p_type) == PT_NOTE)
			ret[n++] = (struct note_area){is64 ? p64.p_offset : p32.p_offset,
						      is64 ? p64.p_filesz : p32.p_filesz};
	}
	for (unsigned i = 0; !n && shoff && i < shnum && i < HEADERS_MAX; i++) {
		Elf64_Shdr s64;
		Elf32_Shdr s32;
		uint64_t at = shoff + (uint64_t)i * shentsize;

		if (is64 ? read_at(fd, &s64, sizeof(s64), at) : read_at(fd, &s32, sizeof(s32), at))
			break;
		if ((is64 ? s64.sh_type : s32.sh_type) == SHT_NOTE && i < max)
			ret[n++] = (struct note_area){is64 ? s64.sh_offset : s32.sh_offset,
						      is64 ? s64.sh_size : s32.sh_size};
	}
	return n;
}

static bool host_byte_order(unsigned char data)
{
	return data == (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB);
}

int build_id__read_fd(int fd, char *ret_hex, size_t len)
{
	unsigned char ident[EI_NIDENT];
	struct note_area areas[16];
	size_t n;
	int err;

	ret_hex[0] = '\0';
	err = read_at(fd, ident, sizeof(ident), 0);
	if (err == -EIO || (!err && memcmp(ident, ELFMAG, SELFMAG)))
		return -ENOEXEC; /* shorter than an ELF header, or another format */
	if (err)
		return err;
	if ((ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64) ||
	    !host_byte_order(ident[EI_DATA]))
		return 0; /* an ELF we do not read: named by its inode instead */
	n = note_areas(fd, ident, areas, sizeof(areas) / sizeof(areas[0]));
	for (size_t i = 0; i < n; i++)
		if (find_in_notes(fd, &areas[i], ret_hex, len))
			return 0;
	return 0;
}
