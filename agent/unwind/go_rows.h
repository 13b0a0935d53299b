/* SPDX-License-Identifier: Apache-2.0 */
/* Unwind rows of a Go binary from its .gopclntab: each function's pcsp table (SP delta at each
 * pc) is a CFI of its own, so frameless leaves keep their callers without .eh_frame. */
#ifndef ROOTTRACE_GO_ROWS_H
#define ROOTTRACE_GO_ROWS_H

#include "unwind/cfi_compile.h"

/* Compiles the Go text of the ELF file open at fd into sink, the same rows and bounds as
 * cfi_compile's (CFI_MAX_ROWS; a table over 64k rows counted, then streamed). t's header
 * (segments, build-id) is kept; source becomes CFI_SOURCE_GOPCLNTAB. 0 or -errno: ENOENT (not
 * an x86-64 Go binary), EINVAL (its table is damaged), E2BIG (over the bounds), the sink's. */
int go_rows__compile_fd(int fd, struct cfi_table *t, const struct cfi_row_sink *sink);

#endif
