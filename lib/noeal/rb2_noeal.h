/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_NOEAL_H
#define RB2_NOEAL_H

/**
 * @file
 * rb2's channels, transports (shm) and connections in a process that runs
 * no DPDK EAL.
 *
 * An application under rb2-run keeps its threads, signals, CPU affinity,
 * memory and fork to itself: it cannot be an EAL process. Yet its side of a
 * connection must run the same channel and connection code as everybody
 * else's. So the same sources (lib/rb2, lib/xport, the shm driver, lib/conn
 * but the host service's relay) are compiled a second time into the static
 * library `rb2_noeal`, and this library supplies, for that build, the few
 * EAL services they call:
 *
 * | what the code calls                 | here                                   |
 * |-------------------------------------|----------------------------------------|
 * | rte_malloc/zmalloc(_socket), rte_free | the C heap, aligned (process-private, as a private rte_malloc is used) |
 * | rte_memzone_reserve/lookup/free     | named zones in an **arena** (below)     |
 * | rte_mem_virt2memseg_list            | "inside an attached arena"              |
 * | rte_get_tsc_hz                      | the TSC against CLOCK_MONOTONIC_RAW since the load (kept from 50 ms) |
 * | rte_log, log types, rte_log_set_global_level | stderr, WARNING and worse by default (RB2_NOEAL_LOG=1..8) |
 * | rte_errno, rte_lcore_id             | thread-locals; every thread is LCORE_ID_ANY |
 * | sockets, lcores, rte_rand, sleeps   | one socket (0); a seeded xorshift; nanosleep |
 * | rte_ring_lookup                     | nothing: no rb2-raasd group to join (ENOENT) |
 *
 * DPDK's kvargs and telemetry libraries are linked statically: they need no
 * EAL (telemetry commands register, and nobody serves them).
 *
 * **Arenas.** The shm driver's peers address each other's memory directly:
 * in DPDK multi-process every memzone sits at the same virtual address in
 * every process. An arena keeps that contract without the EAL: a memfd
 * (hugetlbfs-backed where hugepages are free, 4 KiB pages otherwise) mapped
 * at one fixed address in every process that attaches it
 * (MAP_FIXED_NOREPLACE: a process where that range is taken gets EEXIST,
 * never a clobbered mapping). Its first page holds a directory of named
 * zones under a robust process-shared mutex, so a process that dies holding
 * it does not wedge the others. Whoever holds the fd can map it: the fd is
 * the capability, handed over a unix socket (SCM_RIGHTS) to exactly the
 * processes that should share it.
 *
 * A reserved zone reads zero, and says so (RB2_MEMZONE_F_ZEROED in its
 * flags, rb2_xport_driver.h): fresh memory, or zeroed as DPDK's heap zeroes
 * freed memory (the shm driver's rendezvous relies on it), at its free or,
 * in an arena never to be reserved from again
 * (rb2_noeal_arena_no_reuse()), when it is reused after all.
 *
 * @code
 * struct rb2_noeal_arena *a = rb2_noeal_arena_create(64 << 20, 0, 0); // creator
 * int fd = rb2_noeal_arena_fd(a);           // send it to the peer process
 * ...
 * struct rb2_noeal_arena *b = rb2_noeal_arena_attach(fd);          // peer
 * // then rb2_xport_open("shm", NULL), rb2_tx_create(), ... as anywhere
 * @endcode
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Where arenas go when the creator gives no address. */
#define RB2_NOEAL_ARENA_ADDR 0x310000000000ull

struct rb2_noeal_arena;

/** rb2_noeal_arena_create() flag: 4 KiB pages even where hugepages are free. */
#define RB2_NOEAL_ARENA_NO_HUGE 1u

/**
 * Make an arena of @p size bytes (rounded up to 2 MiB) at @p addr (0:
 * RB2_NOEAL_ARENA_ADDR), on hugepages if enough are free (unless @p flags
 * has RB2_NOEAL_ARENA_NO_HUGE), else on 4 KiB pages, and attach it: it
 * becomes this process's current arena.
 * @return the arena, or NULL with errno: EEXIST (@p addr is taken here),
 *   EINVAL (an address not 2 MiB-aligned), ENOMEM, or what memfd_create or
 *   mmap said.
 */
struct rb2_noeal_arena *rb2_noeal_arena_create(size_t size, uintptr_t addr,
					       unsigned int flags);

/**
 * The memory of a hugepage arena of @p size bytes, made ahead: a hugetlb
 * memfd whose first hugepage (the header's, and the first zones') the
 * kernel allocates and zeroes now, in the caller's time, rather than at
 * the arena's first touch. A service that makes an arena for each
 * connection prepares a few while it has nothing else to do, and the
 * connection's set-up then skips the zeroing of 2 MiB
 * (rb2_noeal_arena_create_on()).
 * @return the fd (close-on-exec), or -errno: -ENOMEM (no free hugepage),
 *   or what memfd_create or ftruncate said.
 */
int rb2_noeal_arena_prepare(size_t size);

/**
 * As rb2_noeal_arena_create() on hugepages, on @p fd from
 * rb2_noeal_arena_prepare(@p size), which the arena takes: it is closed
 * with the arena, or at once if this fails.
 * @return the arena, or NULL with errno: EINVAL (@p fd is not such a
 *   memfd: not on hugetlbfs, of another size, or made an arena already),
 *   EEXIST (@p addr is taken here), or what mmap said.
 */
struct rb2_noeal_arena *rb2_noeal_arena_create_on(int fd, size_t size, uintptr_t addr);

/**
 * Attach the arena behind @p fd (from rb2_noeal_arena_fd() in another
 * process) at its address; it becomes the calling thread's current arena.
 * The arena keeps
 * its own duplicate of @p fd.
 * @return the arena, or NULL with errno: EINVAL (not an arena), EEXIST
 *   (its address range is taken in this process), or what mmap said.
 */
struct rb2_noeal_arena *rb2_noeal_arena_attach(int fd);

/**
 * Attach as rb2_noeal_arena_attach(), but keep no descriptor: as if
 * rb2_noeal_arena_drop_fd() followed, without the duplicate made and
 * closed (two system calls at each end of each rb2-run connection).
 * @p fd stays the caller's, to close.
 */
struct rb2_noeal_arena *rb2_noeal_arena_map(int fd);

/**
 * Reserve [@p base, @p base + @p len) of this process's address space for
 * arenas (2 MiB-aligned): kept mapped with no access and no memory behind
 * it, so that no other mapping of the process lands there, and so that the
 * page tables above an arena's pages outlive it. An arena created or
 * attached in the range replaces its piece of the reservation, and its
 * detach puts the piece back rather than unmapping it: the kernel neither
 * frees the table pages at the detach nor allocates and clears new ones at
 * the next arena's first touch. Still EEXIST where an arena of this
 * process is mapped. Reserving a range again, or one inside a reserved
 * range, does nothing. A fork child inherits the reservation.
 * @return 0, or -errno: -ENOMEM (RLIMIT_AS is set: a reservation counts
 *   against it), -EEXIST (something is mapped in the range already),
 *   -ENOSPC (4 ranges reserved already), -EINVAL. Arenas then map and
 *   unmap as they would without.
 */
int rb2_noeal_reserve(uintptr_t base, size_t len);

/** Unmap the arena and close its fd. Zones in it must no longer be in use here. */
void rb2_noeal_arena_detach(struct rb2_noeal_arena *a);

/**
 * Holders: how many processes still have to give the arena up. The creator
 * sets the count (rb2_noeal_arena_hold()) before it hands the fd out; each
 * holder calls rb2_noeal_arena_release() instead of detaching when it is
 * done. Whoever keeps a copy of the fd reads the count without mapping the
 * arena (rb2_noeal_arena_holders()): at 0, the arena's address range is free
 * again in every holder. A holder that dies never releases: pair the count
 * with a check of the holders' processes.
 */
void rb2_noeal_arena_hold(struct rb2_noeal_arena *a, uint32_t holders);

/** Give up one hold on @p a, then detach it. */
void rb2_noeal_arena_release(struct rb2_noeal_arena *a);

/** The holders of the arena behind @p fd, read from the fd (pread), or
 *  -errno (-EINVAL: not an arena). */
int rb2_noeal_arena_holders(int fd);

/** The arena's memfd (owned by the arena; dup it to keep it), or -1 once
 *  dropped. */
int rb2_noeal_arena_fd(const struct rb2_noeal_arena *a);

/** Close the arena's memfd: the mapping stays, and a fork child shares it.
 *  For a process that never hands the arena on (rb2-run's side of a
 *  stream): one descriptor fewer a connection. */
void rb2_noeal_arena_drop_fd(struct rb2_noeal_arena *a);

/**
 * Zones freed in @p a are no longer zeroed here: for an arena no zone is
 * reserved from again once its zones go, as rb2-run's stream, one to an
 * arena, unmapped at its close. Zeroing a stream's two 512 KiB rings at
 * each end's close was 12% of all CPU samples (ab against Python's
 * http.server, both under rb2-run), for memory nobody read again. Only
 * this process's frees of @p a are affected; a zone so freed and reserved
 * again is zeroed then.
 */
void rb2_noeal_arena_no_reuse(struct rb2_noeal_arena *a);

/** Where the arena is mapped, and its size. */
void *rb2_noeal_arena_base(const struct rb2_noeal_arena *a);
size_t rb2_noeal_arena_size(const struct rb2_noeal_arena *a);

/** Whether the arena sits on hugepages (else 4 KiB pages). */
int rb2_noeal_arena_huge(const struct rb2_noeal_arena *a);

/** Make @p a the arena rte_memzone_reserve() and rte_memzone_lookup() use
 * in the calling thread (creating or attaching one makes it current too). */
void rb2_noeal_arena_use(struct rb2_noeal_arena *a);

/** Zones in use in @p a, and bytes handed out of it (free zones' included). */
unsigned int rb2_noeal_arena_zones(struct rb2_noeal_arena *a);
size_t rb2_noeal_arena_used(struct rb2_noeal_arena *a);

/**
 * Map in this process, now, every page of @p a handed out so far (the
 * header and each zone): one system call instead of a page fault on each
 * first touch, which costs far more on a VM. The pages past them stay
 * unallocated. (rte_memzone_reserve() does the same for each zone of 64 KiB
 * and more, in the process that reserves it; this is for the others.)
 * @return 0, or -errno (-EINVAL: a kernel before Linux 5.14, which pages
 * them in as it used to).
 */
int rb2_noeal_arena_prefault(struct rb2_noeal_arena *a);

#ifdef __cplusplus
}
#endif

#endif /* RB2_NOEAL_H */
