// SPDX-License-Identifier: Apache-2.0
/* Unit tests for perf-map name normalisation: real lines written by Node 20
 * (--perf-basic-prof) and OpenJDK 17 (-XX:+DumpPerfMapAtExit) on this machine; CPython 3.12,
 * perf-map-agent and .NET lines as those runtimes document them. */
#include "symbolize/jitname.h"
#include "test.h"

static void check(int *ret_failed, const char *symbol, const char *function, const char *file,
		  enum jit_runtime runtime)
{
	struct jit_name n;

	jitname__parse(symbol, &n);
	CHECK_EQ_STR(n.function, function);
	CHECK_EQ_STR(n.file, file);
	CHECK_EQ_INT(n.runtime, runtime);
}

TEST(v8_tiers_are_one_function_without_position)
{
	const char *tiers[] = {"JS:~computeInvoiceTotals /tmp/jt/hot.js:1:30",
			       "JS:^computeInvoiceTotals /tmp/jt/hot.js:1:30",
			       "JS:*computeInvoiceTotals /tmp/jt/hot.js:1:30",
			       "JS:+computeInvoiceTotals /tmp/jt/hot.js:1:30",
			       "LazyCompile:*computeInvoiceTotals /tmp/jt/hot.js:1:30"};

	for (size_t i = 0; i < sizeof(tiers) / sizeof(tiers[0]); i++) {
		check(ret_failed, tiers[i], "computeInvoiceTotals", "/tmp/jt/hot.js",
		      JIT_RUNTIME_V8);
		if (*ret_failed)
			return;
	}
}

TEST(v8_same_function_after_a_deploy_keeps_its_name)
{
	struct jit_name before, after;

	jitname__parse("JS:*computeInvoiceTotals /srv/app/releases/41/hot.js:3:30", &before);
	jitname__parse("JS:~computeInvoiceTotals /srv/app/releases/42/hot.js:9:2", &after);
	CHECK_EQ_STR(before.function, after.function);
}

TEST(v8_getters_anonymous_and_builtin_modules)
{
	check(ret_failed, "JS:^get total /tmp/jt/hot.js:2:22", "get total", "/tmp/jt/hot.js",
	      JIT_RUNTIME_V8);
	check(ret_failed, "JS:~ /tmp/jt/hot.js:3:106", "(anonymous)", "/tmp/jt/hot.js",
	      JIT_RUNTIME_V8);
	check(ret_failed, "Eval:~ /tmp/jt/hot.js:1:1", "(anonymous)", "/tmp/jt/hot.js",
	      JIT_RUNTIME_V8);
	check(ret_failed, "JS:~emit node:events:517:28", "emit", "node:events", JIT_RUNTIME_V8);
	/* not a JavaScript function: kept as written */
	check(ret_failed, "Builtin:ArrayPrototypePush", "Builtin:ArrayPrototypePush", "",
	      JIT_RUNTIME_UNKNOWN);
}

TEST(python_trampolines)
{
	check(ret_failed, "py::handle_request:/srv/app/views.py", "handle_request",
	      "/srv/app/views.py", JIT_RUNTIME_PYTHON);
	check(ret_failed, "py::Invoice.total:/srv/app/models.py", "Invoice.total",
	      "/srv/app/models.py", JIT_RUNTIME_PYTHON);
}

TEST(jvm_signatures)
{
	check(ret_failed, "long Hot.f(long)", "Hot.f", "", JIT_RUNTIME_JVM);
	check(ret_failed, "void java.lang.Object.<init>()", "java.lang.Object.<init>", "",
	      JIT_RUNTIME_JVM);
	check(ret_failed,
	      "java.lang.Object jdk.internal.misc.Unsafe.getReferenceVolatile(java.lang.Object, "
	      "long)",
	      "jdk.internal.misc.Unsafe.getReferenceVolatile", "", JIT_RUNTIME_JVM);
	check(ret_failed, "Lcom/example/Billing$Line;.total(Ljava/lang/String;)J",
	      "com.example.Billing$Line.total", "", JIT_RUNTIME_JVM);
	/* VM stubs are no methods: kept */
	check(ret_failed, "Interpreter", "Interpreter", "", JIT_RUNTIME_UNKNOWN);
	check(ret_failed, "StubRoutines (1)", "StubRoutines (1)", "", JIT_RUNTIME_UNKNOWN);
}

TEST(dotnet_tiers_are_one_function)
{
	check(ret_failed, "[OptimizedTier1] Shop.Billing::Total(int32)", "Shop.Billing::Total", "",
	      JIT_RUNTIME_DOTNET);
	check(ret_failed, "[QuickJitted] Shop.Billing::Total(int32)", "Shop.Billing::Total", "",
	      JIT_RUNTIME_DOTNET);
	check(ret_failed, "instance int32 [Shop] Shop.Billing::Total(int32)[Optimized]",
	      "Shop.Billing::Total", "", JIT_RUNTIME_DOTNET);
}

TEST(unknown_formats_are_kept)
{
	check(ret_failed, "my_jit_block_17", "my_jit_block_17", "", JIT_RUNTIME_UNKNOWN);
	check(ret_failed, "foo(int)", "foo(int)", "", JIT_RUNTIME_UNKNOWN);
	check(ret_failed, "", "", "", JIT_RUNTIME_UNKNOWN);
	check(ret_failed, "JS:", "(anonymous)", "", JIT_RUNTIME_V8);
}

TEST_MAIN("jitname", T(v8_tiers_are_one_function_without_position),
	  T(v8_same_function_after_a_deploy_keeps_its_name),
	  T(v8_getters_anonymous_and_builtin_modules), T(python_trampolines), T(jvm_signatures),
	  T(dotnet_tiers_are_one_function), T(unknown_formats_are_kept))
