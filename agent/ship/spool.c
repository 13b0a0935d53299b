// SPDX-License-Identifier: Apache-2.0
/* Spool directory of upload jobs: "<seq 16 hex>.rtp" files holding a magic line, the query
 * line and the gzipped body; an in-memory index (seq order) keeps the byte cap. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ship/spool.h"

#define MAGIC "RTSPOOL1\n"
#define SUFFIX ".rtp"

struct spool_file {
	uint64_t seq;
	size_t size;
};

struct spool {
	char *dir;
	int dir_fd;
	size_t max_bytes, bytes;
	struct spool_file *files; /* sorted by seq */
	size_t n_files, cap_files;
	uint64_t max_seq, dropped, corrupt;
};

static void name_of(uint64_t seq, char *buf, size_t len)
{
	snprintf(buf, len, "%016" PRIx64 SUFFIX, seq);
}

static int parse_name(const char *name, uint64_t *ret_seq)
{
	char *end;

	if (strlen(name) != 16 + strlen(SUFFIX) || strcmp(name + 16, SUFFIX) != 0)
		return -EINVAL;
	errno = 0;
	*ret_seq = strtoull(name, &end, 16);
	return errno || end != name + 16 ? -EINVAL : 0;
}

static int index_add(struct spool *s, uint64_t seq, size_t size)
{
	size_t i;

	if (s->n_files == s->cap_files) {
		size_t cap = s->cap_files ? s->cap_files * 2 : 64;
		struct spool_file *grown = realloc(s->files, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		s->files = grown;
		s->cap_files = cap;
	}
	for (i = s->n_files; i > 0 && s->files[i - 1].seq > seq; i--)
		s->files[i] = s->files[i - 1];
	s->files[i] = (struct spool_file){seq, size};
	s->n_files++;
	s->bytes += size;
	if (seq > s->max_seq)
		s->max_seq = seq;
	return 0;
}

static void index_del(struct spool *s, uint64_t seq)
{
	for (size_t i = 0; i < s->n_files; i++) {
		if (s->files[i].seq != seq)
			continue;
		s->bytes -= s->files[i].size;
		memmove(&s->files[i], &s->files[i + 1], (s->n_files - i - 1) * sizeof(*s->files));
		s->n_files--;
		return;
	}
}

static int scan(struct spool *s)
{
	int fd = dup(s->dir_fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int ret = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while (!ret && (de = readdir(d))) {
		struct stat st;
		uint64_t seq;

		if (strncmp(de->d_name, ".tmp-", 5) == 0) {
			unlinkat(s->dir_fd, de->d_name, 0); /* a write cut short by a crash */
			continue;
		}
		if (parse_name(de->d_name, &seq) < 0 ||
		    fstatat(s->dir_fd, de->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode))
			continue;
		ret = index_add(s, seq, st.st_size);
	}
	closedir(d);
	return ret;
}

struct spool *spool__open(const char *dir, size_t max_bytes, char *err, size_t err_len)
{
	struct spool *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return NULL;
	s->dir_fd = -1;
	s->max_bytes = max_bytes;
	s->dir = strdup(dir);
	if (!s->dir) {
		ret = -ENOMEM;
		goto fail;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		ret = -errno;
		snprintf(err, err_len, "spool dir %s: %s", dir, strerror(-ret));
		goto fail;
	}
	s->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dir_fd < 0) {
		ret = -errno;
		snprintf(err, err_len, "spool dir %s: %s", dir, strerror(-ret));
		goto fail;
	}
	ret = scan(s);
	if (ret) {
		snprintf(err, err_len, "spool dir %s: scan: %s", dir, strerror(-ret));
		goto fail;
	}
	return s;
fail:
	spool__close(s);
	errno = -ret;
	return NULL;
}

void spool__close(struct spool *s)
{
	if (!s)
		return;
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	free(s->files);
	free(s->dir);
	free(s);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

static void drop_oldest_until(struct spool *s, size_t incoming)
{
	char name[64];

	while (s->n_files && s->bytes + incoming > s->max_bytes) {
		name_of(s->files[0].seq, name, sizeof(name));
		unlinkat(s->dir_fd, name, 0);
		index_del(s, s->files[0].seq);
		s->dropped++;
	}
}

int spool__write(struct spool *s, struct upload_job *job)
{
	size_t qlen = strlen(job->query);
	size_t size = strlen(MAGIC) + qlen + 1 + job->len;
	char name[64], tmp[80];
	int fd, ret;

	if (size > s->max_bytes)
		return -EFBIG;
	drop_oldest_until(s, size);
	name_of(job->seq, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), ".tmp-%s", name);
	fd = openat(s->dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ret = write_all(fd, MAGIC, strlen(MAGIC));
	if (!ret)
		ret = write_all(fd, job->query, qlen);
	if (!ret)
		ret = write_all(fd, "\n", 1);
	if (!ret)
		ret = write_all(fd, job->body, job->len);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (!ret && renameat(s->dir_fd, tmp, s->dir_fd, name) < 0)
		ret = -errno;
	if (ret) {
		unlinkat(s->dir_fd, tmp, 0);
		return ret;
	}
	free(job->spool_name);
	job->spool_name = strdup(name);
	if (!job->spool_name || index_add(s, job->seq, size) < 0) {
		unlinkat(s->dir_fd, name, 0);
		return -ENOMEM;
	}
	return 0;
}

int spool__remove(struct spool *s, const char *name)
{
	uint64_t seq;

	if (!name || parse_name(name, &seq) < 0)
		return -EINVAL;
	index_del(s, seq);
	if (unlinkat(s->dir_fd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* Reads one spooled file into a job; -EINVAL when corrupt. */
static int load(struct spool *s, uint64_t seq, struct upload_job **ret_job)
{
	char name[64];
	struct stat st;
	struct upload_job *job;
	char *buf, *nl;
	int fd, ret = 0;
	ssize_t n;

	name_of(seq, name, sizeof(name));
	fd = openat(s->dir_fd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size <= (off_t)strlen(MAGIC)) {
		close(fd);
		return -EINVAL;
	}
	buf = malloc(st.st_size + 1);
	job = calloc(1, sizeof(*job));
	if (!buf || !job) {
		ret = -ENOMEM;
		goto out;
	}
	n = pread(fd, buf, st.st_size, 0);
	buf[n > 0 ? n : 0] = '\0';
	nl = n == st.st_size ? memchr(buf + strlen(MAGIC), '\n', n - strlen(MAGIC)) : NULL;
	if (memcmp(buf, MAGIC, strlen(MAGIC)) != 0 || !nl || nl + 1 == buf + n) {
		ret = -EINVAL;
		goto out;
	}
	job->seq = seq;
	job->query = strndup(buf + strlen(MAGIC), nl - buf - strlen(MAGIC));
	job->len = buf + n - (nl + 1);
	job->body = malloc(job->len);
	job->spool_name = strdup(name);
	if (!job->query || !job->body || !job->spool_name) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(job->body, nl + 1, job->len);
	*ret_job = job;
	job = NULL;
out:
	upload_job__free(job);
	free(buf);
	close(fd);
	return ret;
}

int spool__replay(struct spool *s, struct upload_job ***ret_jobs, size_t *ret_n)
{
	struct upload_job **jobs = calloc(s->n_files + 1, sizeof(*jobs));
	size_t n = 0, i = 0;
	int ret;

	if (!jobs)
		return -ENOMEM;
	while (i < s->n_files) {
		uint64_t seq = s->files[i].seq;
		char name[64];

		ret = load(s, seq, &jobs[n]);
		if (ret == -ENOMEM) {
			while (n)
				upload_job__free(jobs[--n]);
			free(jobs);
			return ret;
		}
		if (ret) {
			name_of(seq, name, sizeof(name));
			spool__remove(s, name); /* shifts the index: do not advance i */
			s->corrupt++;
			continue;
		}
		n++;
		i++;
	}
	*ret_jobs = jobs;
	*ret_n = n;
	return 0;
}

uint64_t spool__max_seq(const struct spool *s)
{
	return s->max_seq;
}

size_t spool__bytes(const struct spool *s)
{
	return s->bytes;
}

size_t spool__files(const struct spool *s)
{
	return s->n_files;
}

uint64_t spool__dropped(const struct spool *s)
{
	return s->dropped;
}

uint64_t spool__corrupt(const struct spool *s)
{
	return s->corrupt;
}
