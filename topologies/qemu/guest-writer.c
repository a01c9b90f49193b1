/* SPDX-License-Identifier: MIT */
/* guest-writer - the smallest guest that dirties its RAM from a vCPU: a multiboot kernel
 * (QEMU's -kernel loads it, no firmware setup beyond SeaBIOS, no OS) that sweeps guest-physical
 * [16 MiB, 48 MiB) for ever, writing one 32-bit word per 4 KiB page, the pass number, so every
 * pass dirties each of the 8192 pages once, in address order, as fast as the vCPU runs.
 * scripts/record-qemu.sh --writer vcpu records it from QEMU's process (docs/record.md).
 *
 * Built freestanding for i386 (QEMU's multiboot loader takes 32-bit ELF only) with its own
 * linker script (guest-writer.ld: the multiboot header must be in the file's first 8 KiB):
 *   gcc -m32 -ffreestanding -nostdlib -static -O2 -fno-pic -no-pie \
 *       -Wl,-T,guest-writer.ld -Wl,--build-id=none -o guest-writer.elf guest-writer.c
 */
#define MB_MAGIC 0x1BADB002u
#define MB_FLAGS 0u
#define REGION_START 0x1000000u /* 16 MiB */
#define REGION_END 0x3000000u   /* 48 MiB */
#define PAGE 4096u

__attribute__((section(".multiboot"), used, aligned(4)))
static const unsigned int multiboot_header[3] = { MB_MAGIC, MB_FLAGS, -(MB_MAGIC + MB_FLAGS) };

void _start(void) __attribute__((noreturn));

void _start(void)
{
	unsigned int pass = 1;

	for (;;) {
		for (unsigned int a = REGION_START; a < REGION_END; a += PAGE)
			*(volatile unsigned int *)a = pass;
		pass++;
	}
}
