// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the kallsyms reader: text symbols found by binary search, module names,
 * data symbols as boundaries, unsorted input, hidden (zero) addresses, and /proc/kallsyms. */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "symbolize/kallsyms.h"
#include "temp_file.h"
#include "test.h"

static struct kallsyms *load_text(const char *text)
{
	return temp_file_load(text, kallsyms__load);
}

TEST(text_symbols_found_and_data_is_a_boundary)
{
	/* Deliberately unsorted, with an alias and a module symbol. */
	struct kallsyms *ks = load_text("ffffffff81002000 t vfs_read\n"
					"ffffffff81000000 T _stext\n"
					"ffffffff81001000 T do_syscall_64\n"
					"ffffffff81001000 T alias_of_syscall\n"
					"ffffffff81003000 d some_data\n"
					"ffffffffc0001000 t xfs_iread\t[xfs]\n"
					"ffffffffc0002000 T end_marker\t[xfs]\n");
	const char *module = NULL;

	CHECK(ks);
	CHECK_EQ_STR(kallsyms__lookup(ks, 0xffffffff81001000, &module), "do_syscall_64");
	CHECK_EQ_STR(module, "");
	CHECK_EQ_STR(kallsyms__lookup(ks, 0xffffffff81001fff, NULL), "do_syscall_64");
	CHECK_EQ_STR(kallsyms__lookup(ks, 0xffffffff81002abc, NULL), "vfs_read");
	CHECK(kallsyms__lookup(ks, 0xffffffff81003004, NULL) == NULL);
	CHECK_EQ_STR(kallsyms__lookup(ks, 0xffffffffc0001010, &module), "xfs_iread");
	CHECK_EQ_STR(module, "xfs");
	CHECK(kallsyms__lookup(ks, 0xffffffff80000000, NULL) == NULL);
	CHECK(kallsyms__lookup(ks, 0xffffffffc0002010, NULL) == NULL);
	kallsyms__free(ks);
}

TEST(all_zero_addresses_are_refused)
{
	errno = 0;
	CHECK(load_text("0000000000000000 T _stext\n0000000000000000 t vfs_read\n") == NULL);
	CHECK_EQ_INT(errno, EPERM);
}

TEST(proc_kallsyms_names_a_kernel_function)
{
	struct kallsyms *ks;
	FILE *f;
	char line[256], name[128], type;
	unsigned long long addr = 0;

	errno = 0;
	ks = kallsyms__load("/proc/kallsyms");
	if (!ks && geteuid() != 0) {
		CHECK_EQ_INT(errno, EPERM); /* hidden from non-root: refused, never misread */
		return;
	}
	CHECK(ks);
	CHECK(kallsyms__count(ks) > 1000);
	f = fopen("/proc/kallsyms", "r");
	CHECK(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %127s", &addr, &type, name) == 3 &&
		    strcmp(name, "vfs_read") == 0)
			break;
		addr = 0;
	}
	fclose(f);
	CHECK(addr != 0);
	CHECK_EQ_STR(kallsyms__lookup(ks, addr + 4, NULL), "vfs_read");
	kallsyms__free(ks);
}

TEST_MAIN("kallsyms", T(text_symbols_found_and_data_is_a_boundary),
	  T(all_zero_addresses_are_refused), T(proc_kallsyms_names_a_kernel_function))
