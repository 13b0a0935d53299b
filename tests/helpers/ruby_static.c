// SPDX-License-Identifier: Apache-2.0
/* Stands for a ruby built without libruby.so (--disable-shared): the executable itself defines
 * the TLS ruby_current_ec (local-exec: no module-id relocation), ruby_version, rb_vm_exec and
 * vm_exec_core, as test-ruby-runtime's detection case needs. Waits until killed. */
#include <unistd.h>

__thread void *ruby_current_ec;
const char ruby_version[] = "3.1.2";
unsigned long rb_cObject;

__attribute__((noinline)) void vm_exec_core(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void rb_vm_exec(void)
{
	vm_exec_core();
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	static int ec;

	ruby_current_ec = &ec;
	rb_vm_exec();
	for (;;)
		pause();
}
