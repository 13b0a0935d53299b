/* SPDX-License-Identifier: Apache-2.0 */
/* Unit-test helper: text written to a fresh temporary file, for the readers that load a
 * path (kallsyms, perf maps). */
#ifndef ROOTTRACE_TEMP_FILE_H
#define ROOTTRACE_TEMP_FILE_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Creates a file from path_template ("/tmp/rt-x-XXXXXX", rewritten in place) holding text.
 * 0, or -errno with no file left behind. The caller unlinks the file. */
static inline int temp_file_write(char *path_template, const char *text)
{
	size_t len = strlen(text);
	int fd = mkstemp(path_template);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		ret = -EIO;
	close(fd);
	if (ret)
		unlink(path_template);
	return ret;
}

/* loader(path) run on a temporary file holding text, the file removed after; NULL when the
 * file cannot be written. */
#define temp_file_load(text, loader)                                                               \
	({                                                                                         \
		char path_[] = "/tmp/rt-unit-XXXXXX";                                              \
		__typeof__(loader(path_)) ret_ =                                                   \
		    temp_file_write(path_, text) ? NULL : loader(path_);                           \
                                                                                                   \
		unlink(path_); /* after a failed write there is none: ENOENT is fine */            \
		ret_;                                                                              \
	})

#endif
