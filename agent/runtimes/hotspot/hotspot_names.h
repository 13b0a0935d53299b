/* SPDX-License-Identifier: Apache-2.0 */
/* How a Java frame is named: its Method's holder class and method name, two Symbols reached
 * through the ConstMethod and its ConstantPool ("java.util.HashMap.get"). */
#ifndef ROOTTRACE_HOTSPOT_NAMES_H
#define ROOTTRACE_HOTSPOT_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/hotspot/hotspot_vmstructs.h"

/* Names the Method at method, if its ConstMethod is still cookie: "package.Class.method" in
 * ret. 0, -ESTALE (another Method there now), -EINVAL (not a Method we read) or the reader's
 * error. */
int hotspot_method_name(const struct hotspot_reader *r, const struct hotspot_layout *l,
			uint64_t method, uint64_t cookie, char *ret, size_t len);

/* A stub's frame name: its CodeBlob's name at name_ptr ("StubRoutines (1)", "I2C/C2I
 * adapters"), in brackets. 0, -EINVAL (not a name) or the reader's error. */
int hotspot_blob_name(const struct hotspot_reader *r, uint64_t name_ptr, char *ret, size_t len);

#endif
