// SPDX-License-Identifier: Apache-2.0
/* Perf-map symbol names reduced to the function, so one function keeps one name across JIT
 * tiers, source lines and release paths: each runtime's format is recognised by its shape. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "symbolize/jitname.h"

#define ANONYMOUS "(anonymous)"

static bool skip_prefix(const char *s, const char *prefix, const char **ret_rest)
{
	size_t n = strlen(prefix);

	if (strncmp(s, prefix, n))
		return false;
	*ret_rest = s + n;
	return true;
}

/* Copies s[0, len) into buf without surrounding blanks. */
static void copy_trimmed(char *buf, size_t buf_len, const char *s, size_t len)
{
	while (len && *s == ' ') {
		s++;
		len--;
	}
	while (len && s[len - 1] == ' ')
		len--;
	snprintf(buf, buf_len, "%.*s", (int)len, s);
}

/* "/srv/app/hot.js:3:30" -> "/srv/app/hot.js": at most two trailing ":<digits>". */
static void strip_position(char *loc)
{
	for (int i = 0; i < 2; i++) {
		char *colon = strrchr(loc, ':');

		if (!colon || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
			return;
		*colon = '\0';
	}
}

/* V8 (--perf-basic-prof): "JS:*name /path/file.js:3:30", tier one of ~ ^ + *, the name
 * empty for an anonymous function, the position absent for some entries. */
static bool parse_v8(const char *s, struct jit_name *ret)
{
	static const char *const prefixes[] = {
	    "JS:", "LazyCompile:", "Function:", "Eval:", "Script:"};
	const char *rest = NULL, *space;
	size_t i;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (skip_prefix(s, prefixes[i], &rest))
			break;
	if (!rest)
		return false;
	if (*rest && strchr("~*^+", *rest))
		rest++;
	space = strrchr(rest, ' ');
	copy_trimmed(ret->function, sizeof(ret->function), rest,
		     space ? (size_t)(space - rest) : strlen(rest));
	if (!ret->function[0])
		snprintf(ret->function, sizeof(ret->function), "%s", ANONYMOUS);
	if (space) {
		snprintf(ret->file, sizeof(ret->file), "%s", space + 1);
		strip_position(ret->file);
	}
	ret->runtime = JIT_RUNTIME_V8;
	return true;
}

/* CPython 3.12+ perf trampolines: "py::qualname:/path/file.py". */
static bool parse_python(const char *s, struct jit_name *ret)
{
	const char *rest, *colon;

	if (!skip_prefix(s, "py::", &rest) || !*rest)
		return false;
	colon = strchr(rest, ':');
	copy_trimmed(ret->function, sizeof(ret->function), rest,
		     colon ? (size_t)(colon - rest) : strlen(rest));
	if (colon)
		snprintf(ret->file, sizeof(ret->file), "%s", colon + 1);
	ret->runtime = JIT_RUNTIME_PYTHON;
	return true;
}

/* perf-map-agent: "Lcom/example/Foo;.bar(Ljava/lang/String;)V" -> "com.example.Foo.bar". */
static bool parse_jvm_descriptor(const char *s, struct jit_name *ret)
{
	const char *end = strchr(s, ';'), *method;
	size_t n = 0;

	if (s[0] != 'L' || !end || (end[1] != '.' && strncmp(end + 1, "::", 2)))
		return false;
	method = end + (end[1] == '.' ? 2 : 3);
	for (const char *p = s + 1; p < end && n + 1 < sizeof(ret->function); p++)
		ret->function[n++] = *p == '/' ? '.' : *p;
	ret->function[n] = '\0';
	n = strcspn(method, "(");
	snprintf(ret->function + strlen(ret->function),
		 sizeof(ret->function) - strlen(ret->function), ".%.*s", (int)n, method);
	ret->runtime = JIT_RUNTIME_JVM;
	return true;
}

/* The qualified name before the argument list: the last blank-separated word before "(",
 * past a return type and modifiers. [start, *ret_end) of s; false when there is none. */
static bool qualified_name(const char *s, const char **ret_start, size_t *ret_len)
{
	const char *paren = strchr(s, '('), *start;

	if (!paren || paren == s)
		return false;
	start = paren;
	while (start > s && start[-1] != ' ')
		start--;
	if (start == paren)
		return false;
	*ret_start = start;
	*ret_len = (size_t)(paren - start);
	return true;
}

/* .NET: "[OptimizedTier1] Ns.Class::Method(int32)", or the tier after the signature;
 * JVM (-XX:+DumpPerfMapAtExit, jcmd Compiler.perfmap): "long pkg.Class.method(long)". */
static bool parse_signature(const char *s, struct jit_name *ret)
{
	const char *start;
	size_t len;

	if (s[0] == '[' && strchr(s, ']'))
		s = strchr(s, ']') + 1;
	if (!qualified_name(s, &start, &len))
		return false;
	if (memmem(start, len, "::", 2)) {
		ret->runtime = JIT_RUNTIME_DOTNET;
	} else if (memchr(start, '.', len) && s[strlen(s) - 1] == ')') {
		ret->runtime = JIT_RUNTIME_JVM;
	} else {
		return false;
	}
	copy_trimmed(ret->function, sizeof(ret->function), start, len);
	return true;
}

void jitname__parse(const char *symbol, struct jit_name *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (parse_v8(symbol, ret) || parse_python(symbol, ret) ||
	    parse_jvm_descriptor(symbol, ret) || parse_signature(symbol, ret))
		return;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->function, sizeof(ret->function), "%s", symbol);
}

const char *jitname__runtime_name(enum jit_runtime runtime)
{
	switch (runtime) {
	case JIT_RUNTIME_V8:
		return "v8";
	case JIT_RUNTIME_PYTHON:
		return "python";
	case JIT_RUNTIME_JVM:
		return "jvm";
	case JIT_RUNTIME_DOTNET:
		return "dotnet";
	default:
		return "";
	}
}
