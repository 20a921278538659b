//! [`Stack`]: the stack a process started with `clone` runs on when it shares the engine's
//! memory (`CLONE_VM`): a stage's child until its `execve` (`process/spawn.rs`), the builder of
//! namespaces and the init of a stage's PID namespace (`confine/builder.rs`).

use std::ffi::c_void;
use std::io;
use std::sync::{Mutex, PoisonError};

/// Stacks given back ([`Reused`]), for the next child: a mapping made and unmapped for every
/// child costs a few page faults to touch it again and, in a process of many threads, an
/// `munmap` that interrupts every core one of them ran on (docs/performance.md).
static POOL: Mutex<Vec<Stack>> = Mutex::new(Vec::new());

/// At most this many stacks wait in [`POOL`]: as many as children start at once, or about.
const POOLED: usize = 8;

/// An anonymous mapping with a guard page at its lowest address (an overflow faults instead of
/// writing into the engine's memory), unmapped on drop.
///
/// Drop it only once nothing runs on it any more: the process using it has exec'd or exited
/// (`CLONE_VFORK` returns only then), or has been reaped. Where that cannot be known, forget it.
#[derive(Debug)]
pub(crate) struct Stack {
    base: *mut c_void,
    size: usize,
}

// SAFETY: the mapping is owned by the value alone; moving it to another thread moves nothing
// but the address.
unsafe impl Send for Stack {}
// SAFETY: `&Stack` gives only its addresses.
unsafe impl Sync for Stack {}

impl Stack {
    /// Maps `size` bytes (a multiple of the page size), the lowest page inaccessible.
    pub(crate) fn new(size: usize) -> io::Result<Self> {
        // SAFETY: an anonymous private mapping; no existing memory is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Self { base, size };
        // SAFETY: the lowest page of the mapping just made.
        if unsafe { libc::mprotect(base, page_size(), libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The lowest address of the mapping (guard page included), for `clone3`.
    pub(crate) fn base(&self) -> *mut c_void {
        self.base
    }

    /// The size of the mapping, for `clone3`.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Where the stack starts: it grows down from the end of the mapping (page aligned, so
    /// 16-byte aligned).
    pub(crate) fn top(&self) -> *mut c_void {
        self.base.wrapping_byte_add(self.size)
    }
}

/// A [`Stack`] from the pool (or new), given back to it when dropped; the same contract as
/// dropping a [`Stack`]: nothing runs on it any more.
#[derive(Debug)]
pub(crate) struct Reused(Option<Stack>);

impl Reused {
    /// A stack of `size` bytes: one given back earlier, or a new mapping.
    pub(crate) fn take(size: usize) -> io::Result<Self> {
        let kept = {
            let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
            pool.iter()
                .position(|s| s.size == size)
                .map(|i| pool.swap_remove(i))
        };
        match kept {
            Some(stack) => Ok(Self(Some(stack))),
            None => Stack::new(size).map(|s| Self(Some(s))),
        }
    }
}

impl std::ops::Deref for Reused {
    type Target = Stack;

    fn deref(&self) -> &Stack {
        // Only `drop` takes it.
        self.0
            .as_ref()
            .unwrap_or_else(|| unreachable!("a stack taken before its drop"))
    }
}

impl Drop for Reused {
    fn drop(&mut self) {
        if let Some(stack) = self.0.take() {
            let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
            if pool.len() < POOLED {
                pool.push(stack);
            }
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; by the type's contract nothing runs on it.
        unsafe {
            libc::munmap(self.base, self.size);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}
