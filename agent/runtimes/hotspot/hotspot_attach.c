// SPDX-License-Identifier: Apache-2.0
/* Asks a JVM to write its perf map (jcmd Compiler.perfmap, JDK 17+) through HotSpot's attach
 * mechanism: the .attach_pid trigger file, SIGQUIT, the /tmp/.java_pid<pid> unix socket. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "runtimes/hotspot/hotspot_attach.h"

#define POLL_MS 20
#define REPLY_MAX 4096

/* The pid as the JVM sees it (the last NSpid field), and its uid and gid. */
static int read_status(const char *proc_root, pid_t pid, pid_t *ret_nspid, uid_t *ret_uid,
		       gid_t *ret_gid)
{
	char path[64 + 256], line[256];
	unsigned u;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/status", proc_root, pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	*ret_nspid = pid;
	while (fgets(line, sizeof(line), f)) {
		char *last;

		if (!strncmp(line, "NSpid:", 6)) {
			last = strrchr(line, '\t');
			*ret_nspid = (pid_t)strtol(last ? last + 1 : line + 6, NULL, 10);
		} else if (!strncmp(line, "Uid:", 4)) { /* real, then effective: the JVM's */
			sscanf(line + 4, "%*u %u", &u);
			*ret_uid = u;
		} else if (!strncmp(line, "Gid:", 4)) {
			sscanf(line + 4, "%*u %u", &u);
			*ret_gid = u;
		}
	}
	fclose(f);
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The JVM starts its attach listener when it gets SIGQUIT and finds .attach_pid<pid> in its
 * working directory (or /tmp) owned by its user or root. Waits for the socket. */
static int start_listener(const char *proc_root, pid_t pid, pid_t nspid, uid_t uid, gid_t gid,
			  const char *sock, int timeout_ms)
{
	char trigger[512];
	struct stat st;
	int64_t end = now_ms() + timeout_ms;
	int fd, err = -ETIMEDOUT;

	snprintf(trigger, sizeof(trigger), "%s/%d/cwd/.attach_pid%d", proc_root, pid, nspid);
	fd = open(trigger, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) { /* an unwritable working directory: /tmp */
		snprintf(trigger, sizeof(trigger), "%s/%d/root/tmp/.attach_pid%d", proc_root, pid,
			 nspid);
		fd = open(trigger, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return -errno;
	if (fchown(fd, uid, gid)) { /* root's file is accepted too: keep going */
	}
	close(fd);
	if (kill(pid, SIGQUIT)) {
		err = -errno;
	} else {
		while (now_ms() < end) {
			if (!stat(sock, &st) && S_ISSOCK(st.st_mode)) {
				err = 0;
				break;
			}
			poll(NULL, 0, POLL_MS);
		}
	}
	unlink(trigger);
	return err;
}

/* Sends one attach request (protocol 1: version, command, three arguments, each ending in a
 * NUL) and reads the reply's status line ("0" when the command ran). */
static int request(const char *sock, const char *cmd, const char *arg, int timeout_ms)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	char msg[256], reply[REPLY_MAX];
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = timeout_ms % 1000 * 1000};
	size_t len = 0, got = 0;
	int fd, err = 0;
	ssize_t n;

	if (strlen(sock) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	memcpy(addr.sun_path, sock, strlen(sock) + 1);
	len += snprintf(msg + len, sizeof(msg) - len, "1") + 1;
	len += snprintf(msg + len, sizeof(msg) - len, "%s", cmd) + 1;
	len += snprintf(msg + len, sizeof(msg) - len, "%s", arg) + 1;
	msg[len++] = '\0';
	msg[len++] = '\0';
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    write(fd, msg, len) != (ssize_t)len)
		err = -errno;
	while (!err && got < sizeof(reply) - 1 &&
	       (n = read(fd, reply + got, sizeof(reply) - 1 - got)) > 0)
		got += n;
	close(fd);
	if (err)
		return err;
	reply[got] = '\0';
	/* "0\n" then the command's output; jcmd reports its own failures in the output */
	if (strncmp(reply, "0\n", 2) || strstr(reply, "Exception") || strstr(reply, "Unknown"))
		return -EPROTO;
	return 0;
}

int hotspot_attach__perfmap(const char *proc_root, pid_t pid, int timeout_ms)
{
	char sock[512];
	pid_t nspid = pid;
	uid_t uid = 0;
	gid_t gid = 0;
	struct stat st;
	int err;

	err = read_status(proc_root, pid, &nspid, &uid, &gid);
	if (err)
		return err;
	snprintf(sock, sizeof(sock), "%s/%d/root/tmp/.java_pid%d", proc_root, pid, nspid);
	if (stat(sock, &st) || !S_ISSOCK(st.st_mode)) {
		err = start_listener(proc_root, pid, nspid, uid, gid, sock, timeout_ms);
		if (err)
			return err;
	}
	return request(sock, "jcmd", "Compiler.perfmap", timeout_ms);
}
