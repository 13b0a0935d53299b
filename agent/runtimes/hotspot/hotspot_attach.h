/* SPDX-License-Identifier: Apache-2.0 */
/* Asks a JVM to write its perf map (jcmd Compiler.perfmap, JDK 17+) through HotSpot's attach
 * mechanism: the .attach_pid trigger file, SIGQUIT, the /tmp/.java_pid<pid> unix socket. */
#ifndef ROOTTRACE_HOTSPOT_ATTACH_H
#define ROOTTRACE_HOTSPOT_ATTACH_H

#include <sys/types.h>

/* Makes the JVM pid (a HotSpot VM: the caller checked libjvm.so is mapped; SIGQUIT kills
 * another process) write /tmp/perf-<its pid>.map in its mount namespace, waiting up to
 * timeout_ms for its attach listener to start. proc_root is "/proc" unless testing.
 * 0, -ETIMEDOUT (no listener: -XX:+DisableAttachMechanism, -Xrs), -EPROTO (the command
 * failed: before JDK 17) or -errno. */
int hotspot_attach__perfmap(const char *proc_root, pid_t pid, int timeout_ms);

#endif
