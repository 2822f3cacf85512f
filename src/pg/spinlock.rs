//! PostgreSQL's spinlock (`slock_t`) around the generator, taken without
//! pgrx's FFI guard.
//!
//! pgrx's `PgSpinLock` reaches PostgreSQL's `SpinLockAcquire`/`Release`
//! macros through C shims wrapped in a `sigsetjmp` guard, so that an ERROR's
//! longjmp cannot cross Rust frames. Counted with callgrind, that guard cost
//! about 190 instructions per ID, more than the generator itself. A spinlock
//! cannot raise an ERROR (a stuck one PANICs, which aborts the process), so
//! the guard buys nothing here. On x86_64 PostgreSQL's `TAS` is an atomic
//! exchange of one byte and `S_UNLOCK` a release store; we do the same with
//! Rust atomics, and a contended acquire calls PostgreSQL's own `s_lock()`,
//! which spins with its backoff and stuck-lock detection. Other
//! architectures use pgrx's shims.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};

use pgrx::{pg_sys, PGRXSharedMemory};

/// A value behind a PostgreSQL spinlock, for shared memory.
#[repr(C)]
pub struct SpinLocked<T> {
    lock: UnsafeCell<pg_sys::slock_t>,
    data: UnsafeCell<T>,
}

// SAFETY: access to `data` only goes through the lock.
unsafe impl<T: PGRXSharedMemory> PGRXSharedMemory for SpinLocked<T> {}
unsafe impl<T: PGRXSharedMemory> Sync for SpinLocked<T> {}

impl<T: PGRXSharedMemory> SpinLocked<T> {
    pub fn new(value: T) -> Self {
        let mut lock: pg_sys::slock_t = Default::default();
        // SAFETY: initialises a lock nobody else can see yet.
        unsafe { pg_sys::SpinLockInit(&mut lock) };
        SpinLocked { lock: UnsafeCell::new(lock), data: UnsafeCell::new(value) }
    }

    /// Hold the guard for a few instructions: no clock reads, no I/O, no
    /// allocation, nothing that can raise an ERROR.
    #[inline]
    pub fn lock(&self) -> Guard<'_, T> {
        acquire(self.lock.get());
        Guard { owner: self }
    }
}

pub struct Guard<'a, T> {
    owner: &'a SpinLocked<T>,
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the lock is held for the guard's lifetime.
        unsafe { &*self.owner.data.get() }
    }
}

impl<T> DerefMut for Guard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the lock is held for the guard's lifetime, and the guard is unique.
        unsafe { &mut *self.owner.data.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        release(self.owner.lock.get());
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn acquire(lock: *mut pg_sys::slock_t) {
    use std::sync::atomic::{AtomicU8, Ordering};
    // SAFETY: slock_t is an unsigned char on x86_64, initialised by
    // SpinLockInit, and lives in shared memory as long as the server.
    let byte = unsafe { AtomicU8::from_ptr(lock) };
    if byte.swap(1, Ordering::Acquire) != 0 {
        contended(lock);
    }
}

/// Out of line: inlined, its call made every caller save registers it
/// never needs on the uncontended path.
#[cfg(target_arch = "x86_64")]
#[cold]
#[inline(never)]
fn contended(lock: *mut pg_sys::slock_t) {
    // SAFETY: PostgreSQL's contended path; returns holding the lock.
    unsafe { pg_sys::s_lock(lock, c"snowflake_id/src/pg/spinlock.rs".as_ptr(), line!() as i32, c"acquire".as_ptr()) };
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn release(lock: *mut pg_sys::slock_t) {
    use std::sync::atomic::{AtomicU8, Ordering};
    // SAFETY: as in acquire; we hold the lock.
    unsafe { AtomicU8::from_ptr(lock) }.store(0, Ordering::Release);
}

#[cfg(not(target_arch = "x86_64"))]
fn acquire(lock: *mut pg_sys::slock_t) {
    // SAFETY: an initialised lock in shared memory.
    unsafe { pg_sys::SpinLockAcquire(lock) }
}

#[cfg(not(target_arch = "x86_64"))]
fn release(lock: *mut pg_sys::slock_t) {
    // SAFETY: we hold the lock.
    unsafe { pg_sys::SpinLockRelease(lock) }
}
