// SPDX-License-Identifier: Apache-2.0
/* /proc/kallsyms reader: "addr type name [module]" lines into a sorted array plus one name
 * blob. As root the addresses are real; under kptr_restrict they read as zero (refused). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/kallsyms.h"

#define NO_NAME UINT32_MAX
#define MAX_MODULES 1024

struct ksym {
	uint64_t addr;
	uint32_t name_off; /* NO_NAME: a non-text boundary */
	uint16_t module;   /* index into modules; 0 = core kernel */
};			   /* 16 bytes: ~120k of them on a distribution kernel */

struct kallsyms {
	struct ksym *syms;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	char *modules[MAX_MODULES];
	size_t nmodules;
};

static int is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

static int add_name(struct kallsyms *ks, const char *name, uint32_t *ret_off)
{
	size_t len = strlen(name) + 1;

	if (ks->names_len + len > ks->names_cap) {
		size_t cap = ks->names_cap ? ks->names_cap * 2 : 1 << 20;
		char *names;

		while (cap < ks->names_len + len)
			cap *= 2;
		names = realloc(ks->names, cap);
		if (!names)
			return -ENOMEM;
		ks->names = names;
		ks->names_cap = cap;
	}
	if (ks->names_len + len > UINT32_MAX)
		return -E2BIG;
	memcpy(ks->names + ks->names_len, name, len);
	*ret_off = (uint32_t)ks->names_len;
	ks->names_len += len;
	return 0;
}

static int module_index(struct kallsyms *ks, const char *module, uint16_t *ret)
{
	if (!module) {
		*ret = 0;
		return 0;
	}
	for (size_t i = 1; i < ks->nmodules; i++) {
		if (strcmp(ks->modules[i], module) == 0) {
			*ret = (uint16_t)i;
			return 0;
		}
	}
	if (ks->nmodules >= MAX_MODULES)
		return -E2BIG;
	ks->modules[ks->nmodules] = strdup(module);
	if (!ks->modules[ks->nmodules])
		return -ENOMEM;
	*ret = (uint16_t)ks->nmodules++;
	return 0;
}

static int push(struct kallsyms *ks, const struct ksym *sym)
{
	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? ks->cap * 2 : 4096;
		struct ksym *v = realloc(ks->syms, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ks->syms = v;
		ks->cap = cap;
	}
	ks->syms[ks->n++] = *sym;
	return 0;
}

/* One line: "ffffffff81000000 T _stext" or "ffffffffc0000000 t fn\t[module]". */
static int parse_line(struct kallsyms *ks, char *line, int *ret_nonzero)
{
	struct ksym sym = {.name_off = NO_NAME};
	char *end, *name, *module;
	char type;
	int err;

	errno = 0;
	sym.addr = strtoull(line, &end, 16);
	if (errno || end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
		return 0; /* unknown format: skip the line */
	type = end[1];
	name = strtok_r(end + 3, " \t\n", &end);
	if (!name)
		return 0;
	module = strtok_r(NULL, " \t\n", &end);
	if (module && module[0] == '[') {
		module++;
		module[strcspn(module, "]")] = '\0';
	} else {
		module = NULL;
	}
	if (sym.addr)
		*ret_nonzero = 1;
	if (is_text(type)) {
		err = add_name(ks, name, &sym.name_off);
		if (!err)
			err = module_index(ks, module, &sym.module);
		if (err)
			return err;
	}
	return push(ks, &sym);
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Among equal addresses a named (text) symbol first, then file order: names are stored
	 * in the order of their lines. Unnamed boundaries at one address are all alike. */
	return x->name_off < y->name_off ? -1 : x->name_off > y->name_off;
}

/* Sorts and keeps one entry per address. */
static void finish(struct kallsyms *ks)
{
	size_t out = 0;

	qsort(ks->syms, ks->n, sizeof(*ks->syms), ksym_cmp);
	for (size_t i = 0; i < ks->n; i++) {
		if (out && ks->syms[out - 1].addr == ks->syms[i].addr)
			continue;
		ks->syms[out++] = ks->syms[i];
	}
	ks->n = out;
	/* Give back the growth slack; a failed shrink keeps the larger block. */
	if (out) {
		struct ksym *v = realloc(ks->syms, out * sizeof(*v));

		if (v) {
			ks->syms = v;
			ks->cap = out;
		}
	}
	if (ks->names_len) {
		char *names = realloc(ks->names, ks->names_len);

		if (names) {
			ks->names = names;
			ks->names_cap = ks->names_len;
		}
	}
}

struct kallsyms *kallsyms__load(const char *path)
{
	struct kallsyms *ks = calloc(1, sizeof(*ks));
	char *line = NULL;
	size_t cap = 0;
	int nonzero = 0, err = 0;
	FILE *f;

	if (!ks)
		return NULL;
	ks->modules[0] = NULL;
	ks->nmodules = 1;
	f = fopen(path, "re");
	if (!f) {
		err = -errno;
		goto fail;
	}
	while (!err && getline(&line, &cap, f) > 0)
		err = parse_line(ks, line, &nonzero);
	free(line);
	fclose(f);
	if (!err && !nonzero)
		err = -EPERM; /* kptr_restrict: addresses hidden */
	if (err)
		goto fail;
	finish(ks);
	return ks;
fail:
	kallsyms__free(ks);
	errno = -err;
	return NULL;
}

void kallsyms__free(struct kallsyms *ks)
{
	if (!ks)
		return;
	for (size_t i = 1; i < ks->nmodules; i++)
		free(ks->modules[i]);
	free(ks->syms);
	free(ks->names);
	free(ks);
}

const char *kallsyms__lookup(const struct kallsyms *ks, uint64_t addr, const char **ret_module)
{
	size_t lo = 0, hi = ks->n;
	const struct ksym *sym;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Before the first symbol, or past the last one (no end known): not named. */
	if (!lo || lo == ks->n)
		return NULL;
	sym = &ks->syms[lo - 1];
	if (sym->name_off == NO_NAME)
		return NULL;
	if (ret_module)
		*ret_module = sym->module ? ks->modules[sym->module] : "";
	return ks->names + sym->name_off;
}

size_t kallsyms__count(const struct kallsyms *ks)
{
	return ks->n;
}

size_t kallsyms__memory(const struct kallsyms *ks)
{
	return sizeof(*ks) + ks->cap * sizeof(*ks->syms) + ks->names_cap;
}
