// SPDX-License-Identifier: Apache-2.0
/* The big-table builder thread: a queue of files in, finished builds out, one compile at a
 * time streamed into rows reserved through the owner. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "unwind/row_index.h"
#include "unwind/table_builder.h"

#define BUILDER_NICE 10

struct queued_file {
	uint32_t id;
	int fd;
};

struct table_builder {
	struct table_builder_ops ops;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* a file queued, or stop */
	pthread_cond_t idle; /* a build finished */
	struct queued_file queue[TABLE_BUILDER_QUEUE_MAX];
	size_t n_queued;
	bool building;
	struct table_build done[TABLE_BUILDER_QUEUE_MAX];
	size_t n_done;
	bool stop;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* --- one build: the compiler's row sink ------------------------------------------------- */

struct build_ctx {
	struct table_builder *tb;
	struct table_build *b;
	struct row_index ri; /* the rows' pcs, for the index */
};

/* The compiled size is known: a free range, or the build ends (frame pointers for it). */
static int build_begin(void *ctx, const struct cfi_table *t)
{
	struct build_ctx *c = ctx;
	const struct table_builder_ops *ops = &c->tb->ops;
	int ret;

	if (t->n_rows > ops->capacity / 2)
		return -E2BIG;
	if (row_index__begin_table(&c->ri, t))
		return -ENOMEM;
	/* ranges start on a row pair; the index follows the rows */
	c->b->span = ((uint32_t)(t->n_rows + 1) & ~1u) + c->ri.budget;
	ret = ops->reserve(ops->ctx, c->b->span, &c->b->first_row);
	c->b->reserved = !ret;
	return ret;
}

static int build_write(void *ctx, size_t first, const struct unwind_row *rows, size_t n)
{
	struct build_ctx *c = ctx;
	const struct table_builder_ops *ops = &c->tb->ops;

	if (__atomic_load_n(&c->tb->stop, __ATOMIC_RELAXED))
		return -ECANCELED;
	row_index__add(&c->ri, rows, n);
	return ops->write_rows(ops->ctx, c->b->first_row + (uint32_t)first, rows, n);
}

static void build_one(struct table_builder *tb, const struct queued_file *f, struct table_build *b)
{
	struct build_ctx c = {.tb = tb, .b = b};
	struct cfi_row_sink sink = {.ctx = &c, .begin = build_begin, .write = build_write};
	uint64_t t0 = now_ns();

	memset(b, 0, sizeof(*b));
	b->id = f->id;
	b->ret = cfi_compile_fd_to(f->fd, &b->info, &sink);
	if (!b->ret && b->reserved)
		b->ret =
		    row_index__write(&c.ri, b->first_row + (((uint32_t)b->info.n_rows + 1) & ~1u),
				     &b->index, tb->ops.write_rows, tb->ops.ctx);
	row_index__free(&c.ri);
	b->build_ns = now_ns() - t0;
	close(f->fd);
	malloc_trim(0); /* the compile's memory (libdw's FDE cache) goes back to the system */
}

/* --- the thread ---------------------------------------------------------------------------- */

static void *builder_main(void *arg)
{
	struct table_builder *tb = arg;

	setpriority(PRIO_PROCESS, (id_t)gettid(), BUILDER_NICE);
	pthread_mutex_lock(&tb->lock);
	for (;;) {
		struct queued_file f;
		struct table_build b;

		while (!tb->stop && !tb->n_queued)
			pthread_cond_wait(&tb->wake, &tb->lock);
		if (tb->stop)
			break;
		f = tb->queue[0];
		memmove(tb->queue, tb->queue + 1, --tb->n_queued * sizeof(*tb->queue));
		tb->building = true;
		pthread_mutex_unlock(&tb->lock);
		build_one(tb, &f, &b);
		pthread_mutex_lock(&tb->lock);
		tb->done[tb->n_done++] = b; /* room: submit counts done builds too */
		tb->building = false;
		pthread_cond_broadcast(&tb->idle);
	}
	pthread_mutex_unlock(&tb->lock);
	return NULL;
}

struct table_builder *table_builder__new(const struct table_builder_ops *ops)
{
	struct table_builder *tb = calloc(1, sizeof(*tb));
	int ret;

	if (!tb)
		return NULL;
	tb->ops = *ops;
	pthread_mutex_init(&tb->lock, NULL);
	pthread_cond_init(&tb->wake, NULL);
	pthread_cond_init(&tb->idle, NULL);
	ret = pthread_create(&tb->thread, NULL, builder_main, tb);
	if (ret) {
		pthread_mutex_destroy(&tb->lock);
		pthread_cond_destroy(&tb->wake);
		pthread_cond_destroy(&tb->idle);
		free(tb);
		errno = ret;
		return NULL;
	}
	pthread_setname_np(tb->thread, "unwind-build");
	return tb;
}

void table_builder__free(struct table_builder *tb)
{
	if (!tb)
		return;
	pthread_mutex_lock(&tb->lock);
	__atomic_store_n(&tb->stop, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&tb->wake);
	pthread_mutex_unlock(&tb->lock);
	pthread_join(tb->thread, NULL);
	for (size_t i = 0; i < tb->n_queued; i++)
		close(tb->queue[i].fd);
	pthread_mutex_destroy(&tb->lock);
	pthread_cond_destroy(&tb->wake);
	pthread_cond_destroy(&tb->idle);
	free(tb);
}

int table_builder__submit(struct table_builder *tb, uint32_t id, int fd)
{
	int ret = 0;

	pthread_mutex_lock(&tb->lock);
	if (tb->n_queued + tb->building + tb->n_done >= TABLE_BUILDER_QUEUE_MAX) {
		ret = -EBUSY;
	} else {
		tb->queue[tb->n_queued++] = (struct queued_file){.id = id, .fd = fd};
		pthread_cond_signal(&tb->wake);
	}
	pthread_mutex_unlock(&tb->lock);
	return ret;
}

size_t table_builder__take_done(struct table_builder *tb, struct table_build *ret, size_t max)
{
	size_t n;

	pthread_mutex_lock(&tb->lock);
	n = tb->n_done < max ? tb->n_done : max;
	memcpy(ret, tb->done, n * sizeof(*ret));
	memmove(tb->done, tb->done + n, (tb->n_done - n) * sizeof(*tb->done));
	tb->n_done -= n;
	pthread_mutex_unlock(&tb->lock);
	return n;
}

size_t table_builder__busy(struct table_builder *tb)
{
	size_t n;

	pthread_mutex_lock(&tb->lock);
	n = tb->n_queued + tb->building;
	pthread_mutex_unlock(&tb->lock);
	return n;
}

size_t table_builder__in_flight(struct table_builder *tb)
{
	size_t n;

	pthread_mutex_lock(&tb->lock);
	n = tb->n_queued + tb->building + tb->n_done;
	pthread_mutex_unlock(&tb->lock);
	return n;
}

bool table_builder__wait_idle(struct table_builder *tb, int timeout_ms)
{
	struct timespec deadline;
	bool idle;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&tb->lock);
	while ((tb->n_queued || tb->building) &&
	       pthread_cond_timedwait(&tb->idle, &tb->lock, &deadline) != ETIMEDOUT)
		;
	idle = !tb->n_queued && !tb->building;
	pthread_mutex_unlock(&tb->lock);
	return idle;
}
